#!/usr/bin/env bash
# Re-vendors the console's charting library from the npm registry (pinned), so the
# console works offline: nothing is fetched at build or run time.
# uPlot is MIT-licensed; its licence is kept next to the files.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.6.32
dest=crates/toolbelt-console/assets/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null && tar xzf "uplot-$version.tgz")
cp "$tmp/package/dist/uPlot.esm.js" "$dest/uPlot.esm.js"
cp "$tmp/package/dist/uPlot.min.css" "$dest/uPlot.min.css"
cp "$tmp/package/LICENSE" "$dest/uPlot.LICENSE"
echo "uPlot $version (MIT, npm registry)" > "$dest/VERSIONS"
echo "vendored uPlot $version into $dest"

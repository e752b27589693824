#!/usr/bin/env bash
# Puts a large real OpenAPI document in target/openapi-samples/ for the toolbelt-openapi tests
# (tests/it/large.rs): GitHub's REST API description (OpenAPI 3.0.3, about 1,200 operations,
# 13 MB), shipped in the npm package @octokit/openapi (MIT). Needs npm and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/openapi-samples
version=23.0.2
[ -s "$out/api.github.com.json" ] && { echo "present: $out/api.github.com.json"; exit 0; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@octokit/openapi@$version" >/dev/null)
tar -xzf "$work"/octokit-openapi-$version.tgz -C "$work" package/generated/api.github.com.json
mv "$work/package/generated/api.github.com.json" "$out/"
echo "fetched: $out/api.github.com.json"

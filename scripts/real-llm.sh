#!/usr/bin/env bash
# Runs a small task set through `toolbelt run` against a real local model (llama.cpp's llama-server with
# Qwen2.5-Coder, set up by ../shared/real-llm/) and prints the success rate per task and the median time.
# CI does not run it: it needs the model (~1 GB) and takes minutes per run on 2 cores.
#
# Usage: scripts/real-llm.sh [-n RUNS] [-m 1.5b|0.5b] [-t native|text] [-- extra toolbelt run flags]
#   -n RUNS   runs per task, with seeds 1..RUNS (default 3)
#   -m SIZE   model size (default 1.5b)
#   -t MODE   server template: native (server returns tool_calls) or text (the model's own template;
#             calls come back as ```json text for the client to parse) (default native)
# Env: REAL_LLM_DIR (default ../shared/real-llm from the repo root), TOOLBELT (a built binary; default
#      target/debug/toolbelt, built if missing), KEEP=1 keeps the work directories,
#      TOOLBELT_REAL_LLM_URL (use a server already running there instead of starting one),
#      RUN_TIMEOUT (seconds per run, default 540: a run still going then counts as failed).
# Success per run: exit code 0, the expected fact in stdout, no tool-call text in stdout, and for the
# edit task the file changed as asked. Routing is on (no --no-router, no hand-picked groups).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=3; size=1.5b; mode=native
while getopts "n:m:t:" opt; do
  case $opt in n) runs=$OPTARG ;; m) size=$OPTARG ;; t) mode=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1)); [ "${1:-}" = "--" ] && shift
extra=("$@")
dir=${REAL_LLM_DIR:-$root/../shared/real-llm}
[ -d "$dir" ] || dir=/work/shared/real-llm
model="qwen2.5-coder-$size-instruct"
bin=${TOOLBELT:-${CARGO_TARGET_DIR:-$root/target}/debug/toolbelt}
[ -x "$bin" ] || (cd "$root" && cargo build -q -p toolbelt)

started_server=
if [ -n "${TOOLBELT_REAL_LLM_URL:-}" ]; then
  url=$TOOLBELT_REAL_LLM_URL
else
  "$dir/setup.sh" "$size" >&2
  url=$("$dir/serve.sh" "$size" "$mode")
  started_server=$(cat "${REAL_LLM_HOME:-$HOME/.cache/toolbelt-real-llm}/server.pid")
fi
cleanup() { [ -n "$started_server" ] && kill "$started_server" 2>/dev/null || true; }
trap cleanup EXIT

work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "work directories under $work" >&2

# task name | prompt | expected text in stdout (grep -i -E) | stdin (approvals)
tasks=(
  "read|Read hello.txt and tell me what it says.|42 apples|"
  "list-read|List the files in this directory, then read notes.md and tell me the secret word it contains.|marmalade|"
  "edit|In config.txt, change the port from 8080 to 9090.||y\ny\ny\ny\ny\ny\n"
  "chinese|读取 hello.txt 文件，告诉我里面写了什么。|42|"
  "no-tool|What is the capital of France? Answer in one word.|paris|"
)

setup_workspace() {
  mkdir -p "$1"
  printf 'Hello from toolbelt: the basket holds 42 apples.\n' > "$1/hello.txt"
  printf '# Notes\n\nThe secret word is marmalade.\n' > "$1/notes.md"
  printf 'host = "localhost"\nport = 8080\n' > "$1/config.txt"
}

leaked() {  # tool-call text in the answer: a call object's keys or a call tag (a ```json fence around prose is not one)
  grep -q -E '"(name|arguments)" *:|<tool_call|\[TOOL_CALLS\]' "$1"
}

printf '%s\n' "model: $model ($mode template), runs per task: $runs, server: $url" >&2
results=()
for task in "${tasks[@]}"; do
  IFS='|' read -r name prompt expect input <<<"$task"
  ok=0; times=()
  for seed in $(seq 1 "$runs"); do
    ws="$work/$name-$seed"; setup_workspace "$ws"
    start=$(date +%s.%N)
    set +e
    (cd "$ws" && printf "$input" | OPENAI_BASE_URL="$url" OPENAI_API_KEY=x TOOLBELT_MODEL="$model" \
      timeout $((${RUN_TIMEOUT:-540} + 30)) "$bin" run --seed "$seed" --temperature 0.7 \
      --timeout "${RUN_TIMEOUT:-540}" "${extra[@]}" "$prompt" \
      >"$ws.out" 2>"$ws.err")
    code=$?
    set -e
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc); times+=("$t")
    pass=1; why=""
    [ "$code" = 0 ] || { pass=0; why="exit $code"; }
    if leaked "$ws.out"; then pass=0; why="$why tool-call text in stdout"; fi
    if [ "$name" = edit ]; then
      grep -q 9090 "$ws/config.txt" && ! grep -q 8080 "$ws/config.txt" || { pass=0; why="$why file not edited"; }
    elif ! grep -q -i -E "$expect" "$ws.out"; then
      pass=0; why="$why expected /$expect/ not in answer"
    fi
    calls=$(grep -c '^→ ' "$ws.err" || true)
    summary=$(grep -E '^\(' "$ws.err" | tail -1)
    printf '%-10s seed %-3s %s %6.1fs  %s tool calls %s %s\n' "$name" "$seed" \
      "$([ $pass = 1 ] && echo PASS || echo FAIL)" "$t" "$calls" "$summary" "$why" >&2
    ok=$((ok + pass))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
  results+=("| $name | $ok/$runs | $(printf '%.0f' "$((ok * 100 / runs))")% | $(printf '%.1f' "$median") s |")
done

echo "| task | passed | rate | median time |"
echo "| --- | --- | --- | --- |"
printf '%s\n' "${results[@]}"
[ -n "${KEEP:-}" ] || rm -rf "$work"

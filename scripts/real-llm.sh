#!/usr/bin/env bash
# Runs a task set of 30 workspace requests (10 kinds, each twice in English and once in Chinese) through
# `toolbelt run --yes` against a real local model (llama.cpp's llama-server with Qwen2.5-Coder, set up by
# ../shared/real-llm/) and prints the success rate per task and per kind, and the median time.
# CI does not run it: it needs the model (~1 GB) and takes about a minute per run on 2 cores.
#
# Usage: scripts/real-llm.sh [-n RUNS] [-s FIRST] [-m 1.5b|0.5b] [-t native|text] [-k KIND,...] [-o TASK,...]
#                            [-- extra toolbelt run flags]
#   -k KINDS  only these kinds (search, count, list, structured, create, edit, multi-step, git, read, no-tool)
#   -o TASKS  only these tasks (by name)
#   -n RUNS   runs per task, with seeds 1..RUNS (default 3)
#   -s FIRST  the first seed (default 1): -s 2 -n 2 runs seeds 2 and 3
#   -m SIZE   model size (default 1.5b)
#   -t MODE   server template: native (server returns tool_calls) or text (the model's own template;
#             calls come back as ```json text for the client to parse) (default native)
# Env: REAL_LLM_DIR (default ../shared/real-llm from the repo root), TOOLBELT (a built binary; default
#      target/debug/toolbelt, built if missing), KEEP=1 keeps the work directories and each run's
#      transcript (NAME-SEED.json, from `toolbelt run --transcript`),
#      TOOLBELT_REAL_LLM_URL (use a server already running there instead of starting one),
#      RUN_TIMEOUT (seconds per run, default 540: a run still going then counts as failed).
# Success per run: exit code 0, no tool-call text in stdout, and the task's check: the expected facts
# in stdout, or the file created or changed as asked. Routing is on (no --no-router, no hand-picked
# groups); approvals are given by --yes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=3; first=1; size=1.5b; mode=native; only_kinds=; only_names=
while getopts "n:s:m:t:k:o:" opt; do
  case $opt in n) runs=$OPTARG ;; s) first=$OPTARG ;; m) size=$OPTARG ;; t) mode=$OPTARG ;;
    k) only_kinds=$OPTARG ;; o) only_names=$OPTARG ;; *) exit 2 ;; esac
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

# The task set: ten kinds of request people make of a workspace assistant, two in English and one in
# Chinese each. Fields, split on "~": kind ~ name ~ prompt ~ check. A check is either
# "out:RE1;;RE2..." (every extended regex found in stdout, case-insensitive) or "file:SHELL" (a
# shell test run in the workspace after the run, e.g. that a file was changed as asked).
tasks=(
  "search~search-word~Which file in this folder mentions the word invoice?~out:invoice-2024"
  "search~search-day~Find the file that talks about a meeting with Dana and tell me which day the meeting is.~out:tuesday"
  "search~search-zh~哪个文件里提到了 Acme Corp？告诉我文件名。~out:invoice-2024"
  "count~count-rows~How many rows of data, not counting the header, are in data/users.csv?~out:(^|[^0-9])7([^0-9]|$)|seven"
  "count~count-errors~How many lines in logs/app.log contain ERROR?~out:(^|[^0-9])3([^0-9]|$)|three"
  "count~count-zh~src 目录下有几个 .py 文件？~out:(^|[^0-9])3([^0-9]|$)|三"
  "list~list-python~List the Python files under src.~out:app\.py;;util\.py;;test_app\.py"
  "list~list-folders~What folders are in this directory?~out:docs;;logs;;data;;src"
  "list~list-zh~列出 docs 文件夹里的文件。~out:invoice-2024;;meeting"
  "structured~json-theme~What theme is set in data/settings.json?~out:dark"
  "structured~yaml-deploy~How many replicas does data/deploy.yaml ask for, and which image version does it deploy?~out:(^|[^0-9.])3([^0-9.]|$)|three;;1\.4\.2"
  "structured~json-zh~data/settings.json 里 owner 的名字是什么？~out:Lin"
  "create~create-todo~Create a file named todo.txt containing the line: buy milk~file:grep -qi 'buy milk' todo.txt"
  "create~create-readme~Write a short README.md for this folder that mentions the word toolbelt.~file:grep -qi toolbelt README.md"
  "create~create-zh~新建一个文件 greeting.txt，内容写：你好。~file:grep -q 你好 greeting.txt"
  "edit~edit-port~In config.txt, change the port from 8080 to 9090.~file:grep -q 9090 config.txt && ! grep -q 8080 config.txt"
  "edit~edit-json~In data/settings.json, set retries to 10.~file:grep -Eq '\"retries\": *10' data/settings.json && python3 -m json.tool data/settings.json >/dev/null"
  "edit~edit-zh~把 notes.md 里的秘密单词从 marmalade 改成 honey。~file:grep -q honey notes.md && ! grep -q marmalade notes.md"
  "multi-step~list-read~List the files in this directory, then read notes.md and tell me the secret word it contains.~out:marmalade"
  "multi-step~copy-host~Read config.txt and write the host name it uses into a new file host.txt.~file:grep -q localhost host.txt"
  "multi-step~multi-zh~先找到提到 Dana 的文件，再告诉我会议讨论的主题。~out:budget|预算"
  "git~git-last~What was the message of the most recent git commit?~out:off-by-one"
  "git~git-changed~Which files have uncommitted changes in this git repository?~out:notes\.md"
  "git~git-zh~这个仓库一共有几次提交？~out:(^|[^0-9])2([^0-9]|$)|两|二"
  "read~read-hello~Read hello.txt and tell me what it says.~out:42 apples"
  "read~read-log~What does the first line of logs/app.log say?~out:server started"
  "read~read-zh~读取 hello.txt 文件，告诉我里面写了什么。~out:42"
  "no-tool~capital~What is the capital of France? Answer in one word.~out:paris"
  "no-tool~convert~How many metres are in 3 kilometres?~out:3,?000"
  "no-tool~recursion-zh~用一句话解释什么是递归。~out:递归|调用"
)

setup_workspace() {
  mkdir -p "$1"/docs "$1"/logs "$1"/data "$1"/src
  printf 'Hello from toolbelt: the basket holds 42 apples.\n' > "$1/hello.txt"
  printf '# Notes\n\nThe secret word is marmalade.\n' > "$1/notes.md"
  printf 'host = "localhost"\nport = 8080\n' > "$1/config.txt"
  printf 'Invoice INV-7731 for Acme Corp.\nTotal due: 1,250 EUR by the end of the month.\n' > "$1/docs/invoice-2024.txt"
  printf '# Meeting\n\nMeeting on Tuesday with Dana about the budget for next quarter.\n' > "$1/docs/meeting.md"
  printf '2026-11-02 09:00:01 INFO server started\n2026-11-02 09:00:05 ERROR cannot reach the cache\n2026-11-02 09:01:10 INFO request served\n2026-11-02 09:02:44 ERROR timeout talking to billing\n2026-11-02 09:03:00 WARN slow response\n2026-11-02 09:04:19 ERROR disk almost full\n' > "$1/logs/app.log"
  printf 'name,city,age\nAda,London,36\nBo,Oslo,29\nChen,Beijing,41\nDana,Lisbon,33\nEli,Tel Aviv,27\nFatima,Cairo,45\nGus,Lima,38\n' > "$1/data/users.csv"
  printf '{\n  "theme": "dark",\n  "retries": 5,\n  "owner": {"name": "Lin"}\n}\n' > "$1/data/settings.json"
  printf 'replicas: 3\nimage: registry.local/app:1.4.2\n' > "$1/data/deploy.yaml"
  printf 'from util import greet\n\nprint(greet("world"))\n' > "$1/src/app.py"
  printf 'def greet(name):\n    return f"hello {name}"\n' > "$1/src/util.py"
  printf 'from util import greet\n\ndef test_greet():\n    assert greet("a") == "hello a"\n' > "$1/src/test_app.py"
  printf 'The sources of a tiny example app.\n' > "$1/src/readme.txt"
  # A repository with two commits and one uncommitted change (notes.md).
  (cd "$1" && git init -q && git config user.email t@example.com && git config user.name tester \
    && git add -A && git commit -q -m "Add parser module" \
    && printf 'one\n' > .pager && git add .pager && git commit -q -m "Fix off-by-one in pager" \
    && printf -- '- call Sam about the lease\n' >> notes.md)
}

leaked() {  # tool-call text in the answer: a call object's keys or a call tag (a ```json fence around prose is not one)
  grep -q -E '"(name|arguments)" *:|<tool_call|\[TOOL_CALLS\]' "$1"
}

printf '%s\n' "model: $model ($mode template), runs per task: $runs, server: $url" >&2
results=()
declare -A kind_ok kind_all
for task in "${tasks[@]}"; do
  IFS='~' read -r kind name prompt check <<<"$task"
  if [ -n "$only_kinds" ] && [[ ",$only_kinds," != *",$kind,"* ]]; then continue; fi
  if [ -n "$only_names" ] && [[ ",$only_names," != *",$name,"* ]]; then continue; fi
  ok=0; times=()
  for seed in $(seq "$first" $((first + runs - 1))); do
    ws="$work/$name-$seed"; setup_workspace "$ws"
    keep=(); [ -n "${KEEP:-}" ] && keep=(--transcript "$ws.json")
    start=$(date +%s.%N)
    set +e
    (cd "$ws" && OPENAI_BASE_URL="$url" OPENAI_API_KEY=x TOOLBELT_MODEL="$model" \
      timeout $((${RUN_TIMEOUT:-540} + 30)) "$bin" run --yes --seed "$seed" --temperature 0.7 \
      --timeout "${RUN_TIMEOUT:-540}" "${keep[@]}" "${extra[@]}" "$prompt" \
      </dev/null >"$ws.out" 2>"$ws.err")
    code=$?
    set -e
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc); times+=("$t")
    pass=1; why=""
    [ "$code" = 0 ] || { pass=0; why="exit $code"; }
    if leaked "$ws.out"; then pass=0; why="$why tool-call text in stdout"; fi
    case "$check" in
      file:*)
        (cd "$ws" && eval "${check#file:}") || { pass=0; why="$why file check failed: ${check#file:}"; } ;;
      out:*)
        IFS=';' read -r -a wanted <<<"${check#out:}"
        for re in "${wanted[@]}"; do
          [ -n "$re" ] || continue
          grep -q -i -E "$re" "$ws.out" || { pass=0; why="$why expected /$re/ not in answer"; }
        done ;;
    esac
    calls=$(grep -c '^→ ' "$ws.err" || true)
    summary=$(grep -E '^\(' "$ws.err" | tail -1)
    printf '%-14s seed %-3s %s %6.1fs  %s tool calls %s %s\n' "$name" "$seed" \
      "$([ $pass = 1 ] && echo PASS || echo FAIL)" "$t" "$calls" "$summary" "$why" >&2
    ok=$((ok + pass))
  done
  kind_ok[$kind]=$(( ${kind_ok[$kind]:-0} + ok )); kind_all[$kind]=$(( ${kind_all[$kind]:-0} + runs ))
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
  results+=("| $kind | $name | $ok/$runs | $((ok * 100 / runs))% | $(printf '%.1f' "$median") s |")
done

echo "| kind | task | passed | rate | median time |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${results[@]}"
echo
echo "| kind | passed | rate |"
echo "| --- | --- | --- |"
total_ok=0; total_all=0
for kind in search count list structured create edit multi-step git read no-tool; do
  [ -n "${kind_all[$kind]:-}" ] || continue
  echo "| $kind | ${kind_ok[$kind]}/${kind_all[$kind]} | $(( ${kind_ok[$kind]} * 100 / ${kind_all[$kind]} ))% |"
  total_ok=$((total_ok + kind_ok[$kind])); total_all=$((total_all + kind_all[$kind]))
done
[ "$total_all" -gt 0 ] && echo "| all | $total_ok/$total_all | $((total_ok * 100 / total_all))% |"
[ -n "${KEEP:-}" ] || rm -rf "$work"

#!/usr/bin/env bash
# Start JupyterLab on notebooks/ with the project's environment.
# LAB_CHECK=1: start it headless, wait until the server answers, print the URL, stop it, exit 0.
set -euo pipefail
venv=${1:-.venv}
port=${PORT:-8888}
cd "$(dirname "$0")/.."
root_flag=()
[ "$(id -u)" = "0" ] && root_flag=(--allow-root)  # containers and CI often run as root
if [ "${LAB_CHECK:-}" != "1" ]; then
  exec "$venv/bin/jupyter" lab "${root_flag[@]}" --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --ServerApp.port="$port"
fi
log=$(mktemp)
"$venv/bin/jupyter" lab "${root_flag[@]}" --no-browser --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 \
  --ServerApp.port="$port" --ServerApp.port_retries=50 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/lab' "$log" | head -1 || true)
  if [ -n "$url" ] && "$venv/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1].replace('/lab', '/api'), timeout=2)" "$url" 2>/dev/null; then
    echo "JupyterLab answered at $url (notebooks: $(ls notebooks/*.ipynb 2>/dev/null | wc -l)); stopping it (LAB_CHECK=1)"
    exit 0
  fi
  kill -0 $pid 2>/dev/null || { cat "$log"; echo "JupyterLab exited before answering"; exit 1; }
  sleep 1
done
cat "$log"; echo "JupyterLab did not answer within 120 s"; exit 1

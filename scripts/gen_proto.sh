#!/usr/bin/env bash
# Regenerates the Python modules for proto/kinetoscope/v1/*.proto.
# Needs the dev extra (grpcio-tools, mypy-protobuf). tests/format/test_proto_fresh.py checks the output is current.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m grpc_tools.protoc -Iproto --python_out="$tmp" --mypy_out="$tmp" \
  --plugin=protoc-gen-mypy="$(dirname "$py")/protoc-gen-mypy" proto/kinetoscope/v1/*.proto
out=src/kinetoscope/format/_proto
for f in "$tmp"/kinetoscope/v1/*_pb2.py "$tmp"/kinetoscope/v1/*_pb2.pyi; do
  cp "$f" "$out/$(basename "$f")"
done

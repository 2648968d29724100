#!/bin/sh
# Generates the Python stubs of leasehold.v1 from the repo's proto/ into ./gen (or the directory given).
# Needs grpcio-tools: Debian `apt-get install python3-grpcio python3-grpc-tools`, or `pip install grpcio-tools`.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/gen}"
mkdir -p "$out"
"${PYTHON:-python3}" -m grpc_tools.protoc -I "$here/../../proto" --python_out="$out" --grpc_python_out="$out" \
  leasehold/v1/lock.proto leasehold/v1/cluster.proto
echo "stubs in $out"

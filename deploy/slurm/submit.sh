#!/bin/bash
# Submits a swarm of SHARDS tasks (deploy/slurm/check.sbatch), each with
# seeds of its own; each task's verdict is its exit code, its report is
# reports/swarm-<index>.log.
#
#   SHARDS=16 SWARM_STATES=4000000 ./deploy/slurm/submit.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards="${SHARDS:-4}"
export SHARDS="$shards"
export SWARM_STATES="${SWARM_STATES:-1000000}"
mkdir -p reports
sbatch --parsable --export=ALL --array="0-$((shards - 1))" "$here/check.sbatch"

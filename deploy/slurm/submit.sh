#!/bin/bash
# Submits a sharded check (an array of SHARDS tasks, deploy/slurm/check.sbatch)
# and its merge (deploy/slurm/merge.sbatch), which Slurm starts once every
# task has ended, whatever their exit codes.
#
#   SHARDS=8 CHECK_ARGS="--base --extensions 4" ./deploy/slurm/submit.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shards="${SHARDS:-4}"
export SHARDS="$shards"
export CHECK_ARGS="${CHECK_ARGS:---base --hooks 2}"
mkdir -p reports
jid=$(sbatch --parsable --export=ALL --array="0-$((shards - 1))" "$here/check.sbatch")
jid="${jid%%;*}"
sbatch --parsable --export=ALL --dependency="afterany:$jid" "$here/merge.sbatch"
echo "submitted the shards as job $jid and their merge after it"

#!/usr/bin/env bash
# Packs the committed tree (HEAD) into .devsrc/ for a run on the GPU machine,
# so uncommitted edits never leak into measurements and every result names its
# commit. .devsrc/ is git-ignored: pass it to the device tool's `carry`, then
#   tar xzf .devsrc/src.tar.gz -C /root/hx && cp .devsrc/commit /root/hx/.commit &&
#   cd /root/hx && bash scripts/device/run.sh build test ...
#   scripts/device/pack.sh --other COMMIT   also packs COMMIT as .devsrc/other.tar.gz
#     (the A of an A/B of two commits: run.sh's stage build-other builds its
#     haloex-md as /tmp/haloex-md-A)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
mkdir -p .devsrc
git archive --format=tar.gz -o .devsrc/src.tar.gz HEAD
git rev-parse HEAD >.devsrc/commit
echo "packed $(cat .devsrc/commit) into .devsrc/ ($(du -h .devsrc/src.tar.gz | cut -f1))"
if [ "${1:-}" = --other ]; then
  other=$(git rev-parse "${2:?--other needs a commit}")
  git archive --format=tar.gz -o .devsrc/other.tar.gz "$other"
  echo "$other" >.devsrc/other-commit
  echo "packed $other into .devsrc/other.tar.gz"
else
  rm -f .devsrc/other.tar.gz .devsrc/other-commit
fi
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "note: uncommitted changes are NOT in the pack" >&2

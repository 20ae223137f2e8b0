#!/usr/bin/env bash
# Packs the committed tree (HEAD) into .devsrc/ for a run on the GPU machine,
# so uncommitted edits never leak into measurements and every result names its
# commit. .devsrc/ is git-ignored: pass it to the device tool's `carry`, then
#   tar xzf .devsrc/src.tar.gz -C /root/hx && cp .devsrc/commit /root/hx/.commit &&
#   cd /root/hx && bash scripts/device/run.sh build test ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
mkdir -p .devsrc
git archive --format=tar.gz -o .devsrc/src.tar.gz HEAD
git rev-parse HEAD >.devsrc/commit
echo "packed $(cat .devsrc/commit) into .devsrc/ ($(du -h .devsrc/src.tar.gz | cut -f1))"
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "note: uncommitted changes are NOT in the pack" >&2

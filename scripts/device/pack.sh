#!/usr/bin/env bash
# Packs the committed tree (HEAD) into .devsrc/ for a run on the GPU machine,
# so uncommitted edits never leak into measurements and every result names its
# commit. .devsrc/ is git-ignored: pass it to the device tool's `carry`, then
#   tar xzf .devsrc/src.tar.gz -C /root/hx && cp .devsrc/commit /root/hx/.commit &&
#   cd /root/hx && bash scripts/device/run.sh build test ...
#   scripts/device/pack.sh --other COMMIT   also packs COMMIT as .devsrc/other.tar.gz
#     (the A of an A/B of two commits: run.sh's stage build-other builds its
#     haloex-md as /tmp/haloex-md-A)
#   scripts/device/pack.sh --variant NAME=COMMIT ...   (repeatable) also packs
#     the difference HEAD..COMMIT as .devsrc/variants/NN-NAME.patch, in the
#     order given (run.sh's stage kernel-variants builds each variant's
#     haloex-bench-nonbonded and measures them all against HEAD's in one
#     rotation: a stack of kernel changes in one allocation);
#     NAME=COMMIT:PATH limits it to PATH (a file or folder): HEAD with PATH as
#     COMMIT has it, e.g. the kernel before a change as the variant
#     (--variant old-tile=ea9358e:proxies/md/cuda/nonbonded.cu)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
mkdir -p .devsrc
git archive --format=tar.gz -o .devsrc/src.tar.gz HEAD
git rev-parse HEAD >.devsrc/commit
echo "packed $(cat .devsrc/commit) into .devsrc/ ($(du -h .devsrc/src.tar.gz | cut -f1))"
rm -f .devsrc/other.tar.gz .devsrc/other-commit
rm -rf .devsrc/variants
n=0
while [ $# -gt 0 ]; do
  case "$1" in
    --other)
      other=$(git rev-parse "${2:?--other needs a commit}")
      git archive --format=tar.gz -o .devsrc/other.tar.gz "$other"
      echo "$other" >.devsrc/other-commit
      echo "packed $other into .devsrc/other.tar.gz"
      shift 2 ;;
    --variant)
      spec="${2:?--variant needs NAME=COMMIT[:PATH]}"
      name="${spec%%=*}"
      [ "$name" != "$spec" ] && [ -n "$name" ] || { echo "pack.sh: --variant $spec: expected NAME=COMMIT[:PATH]" >&2; exit 2; }
      target="${spec#*=}"
      paths=()
      if [[ "$target" == *:* ]]; then
        paths=(-- "${target#*:}")
        target="${target%%:*}"
      fi
      commit=$(git rev-parse "$target")
      n=$((n + 1))
      mkdir -p .devsrc/variants
      patch=".devsrc/variants/$(printf '%02d' "$n")-$name.patch"
      git diff --binary HEAD "$commit" "${paths[@]}" >"$patch"
      [ -s "$patch" ] || { echo "pack.sh: --variant $spec: no difference from HEAD" >&2; exit 2; }
      echo "$commit${paths[*]:+ ${paths[*]}}" >"${patch%.patch}.commit"
      echo "packed variant $name ($commit${paths[*]:+ ${paths[*]}}, $(git diff --shortstat HEAD "$commit" "${paths[@]}")) as $patch"
      shift 2 ;;
    *) echo "pack.sh: unknown argument $1 (--other COMMIT, --variant NAME=COMMIT[:PATH])" >&2; exit 2 ;;
  esac
done
# Written last: a pack cut short (e.g. its output piped into head, which
# ends it at the first closed write) has no count, and run.sh's
# kernel-variants refuses it instead of measuring fewer variants than asked.
[ "$n" -gt 0 ] && echo "$n" >.devsrc/variants/count
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "note: uncommitted changes are NOT in the pack" >&2

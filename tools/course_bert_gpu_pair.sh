#!/usr/bin/env bash
# Two course-bert recipes side by side on one lent GPU (the GPU is far from busy with one 22 M-parameter run),
# each tracked on the held-out text and the everyday cloze dev set; the run whose best-held-out-loss checkpoint
# fills more dev sentences comes back whole (tools/course_bert_gpu.py pack), the other as its record only.
#   usage (there, carrying .gpu and course_lib/data/cloze -- the dev set the runs track; hide leaves it behind):  bash tools/course_bert_gpu_pair.sh "<options A>" "<options B>" DEADLINE_S
# Past DEADLINE_S seconds a run is asked to stop at its next evaluation (its state is saved there).
# Timing (batch 256): two runs sharing an H200 did about 1,000 steps each per 50 s; one run alone on an H100 did
# 1,000 per 36 s (v2.1: 12,000 steps in 7 min). A lent GPU gives 15 minutes a session, machine start included.
set -u
A_OPTS=$1; B_OPTS=$2; DEADLINE=${3:-450}
T0=$(date +%s)
export PYTHONPATH=.gpu/py PYTHONUNBUFFERED=1
python3 tools/course_bert_gpu.py unxz .gpu/text /tmp/et || exit 1
COMMON="--device cuda --bf16 --batch-size 256 --steps 10700 --warmup 300 --eval-every 1000 --eval-also 100,200,300,500 --threads 6 --text /tmp/et --train-only"
python3 tools/train_course_bert.py $COMMON $A_OPTS --run /tmp/cb-A --stop-file /tmp/stop-A > /tmp/A.out 2>&1 &
PA=$!
python3 tools/train_course_bert.py $COMMON $B_OPTS --run /tmp/cb-B --stop-file /tmp/stop-B > /tmp/B.out 2>&1 &
PB=$!
while kill -0 $PA 2>/dev/null || kill -0 $PB 2>/dev/null; do
  sleep 5
  NOW=$(( $(date +%s) - T0 ))
  if [ $NOW -ge $DEADLINE ] && [ ! -e /tmp/stop-A ]; then echo "deadline: asking both runs to stop"; touch /tmp/stop-A /tmp/stop-B; fi
  if [ $NOW -ge $(( DEADLINE + 45 )) ]; then echo "hard stop"; kill $PA $PB 2>/dev/null; sleep 2; break; fi
done
tail -n 3 /tmp/A.out /tmp/B.out
grep "\[eval\]" /tmp/A.out | cut -c1-150 | sed 's/^/A /'
grep "\[eval\]" /tmp/B.out | cut -c1-150 | sed 's/^/B /'
python3 - <<'PY'
import torch, subprocess, sys
best = {}
for r in "AB":
    try:
        s = torch.load(f"/tmp/cb-{r}/state.pt", weights_only=False)
    except Exception as e:
        print(r, "no state:", e); continue
    b = min(s["records"], key=lambda x: (x["loss"], x["step"]))
    best[r] = (b["cloze_dev_top5"], b["cloze_dev_top1"], -b["loss"])
    print(r, "steps", s["step"], "best", b["step"], "loss", round(b["loss"], 3), "top1", round(b["top1"], 3),
          "cloze dev top5/top1", b["cloze_dev_top5"], b["cloze_dev_top1"], s["recipe"])
win = max(best, key=best.get)
print("chosen", win)
open("/tmp/chosen", "w").write(win)
PY
W=$(cat /tmp/chosen); L=$([ "$W" = A ] && echo B || echo A)
python3 tools/course_bert_gpu.py pack /tmp/cb-$W $OUT/chosen
python3 tools/course_bert_gpu.py pack /tmp/cb-$L $OUT/other --record-only
echo "$W" > $OUT/chosen/which
ls -la $OUT/chosen $OUT/other

source .gpu/nsight-env.sh
export PYTHONUNBUFFERED=1
S=target/release/stage2
W=examples/workloads
run() { id=$1; cap=$2; shift 2; t0=$(date +%s); $S profile --run-root /tmp/r --run-id $id --nvtx-capture $cap ncu.clock_control=none run.crosscheck=true -- python3 "$@" > /tmp/$id.log 2>&1; rc=$?; echo "$id rc=$rc $(( $(date +%s)-t0 ))s"; grep -c "differ" /tmp/r/$id/stakeholder_summary.md; cp /tmp/$id.log /tmp/r/$id/console.log 2>/dev/null; sz=$(du -m /tmp/r/$id/nsys/run.sqlite | cut -f1); ex=""; [ "$sz" -gt 40 ] && ex="--exclude=run.sqlite"; (cd /tmp/r && tar czf $OUT/$id.tgz --exclude='*.nsys-rep' --exclude='*.ncu-rep' --exclude='*.qdstrm' $ex $id); ls -la $OUT/$id.tgz; }
run compile decode $W/hf_generate.py --arch qwen2 --compile --new-tokens 32
run batching step $W/batching_loop.py
run fp8 decode $W/fp8_loop.py
run moe decode $W/hf_generate.py --arch mixtral --layers 4 --batch 4 --prompt-len 256 --new-tokens 8
run eager decode $W/hf_generate.py --arch qwen2

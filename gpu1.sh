source .gpu/nsight-env.sh
export PYTHONUNBUFFERED=1
S=target/release/stage2
W=examples/workloads
run() { id=$1; cap=$2; shift 2; t0=$(date +%s); $S profile --run-root /tmp/r --run-id $id --nvtx-capture $cap ncu.clock_control=none -- python3 "$@" > /tmp/$id.log 2>&1; rc=$?; echo "$id rc=$rc $(( $(date +%s)-t0 ))s"; tail -3 /tmp/$id.log; cp /tmp/$id.log /tmp/r/$id/console.log 2>/dev/null; (cd /tmp/r && tar czf $OUT/$id.tgz --exclude='*.nsys-rep' --exclude='*.ncu-rep' --exclude='*.qdstrm' $id); ls -la $OUT/$id.tgz; }
run compile decode $W/hf_generate.py --arch qwen2 --compile --new-tokens 32
run spec16 generate $W/hf_generate.py --arch qwen2 --batch 1 --assistant-layers 2 --new-tokens 16
run prefill8k prefill $W/hf_generate.py --large --batch 1 --prompt-len 8192 --new-tokens 2 --repeat 2
run largestatic decode $W/hf_generate.py --large --static --batch 1 --prompt-len 1024 --new-tokens 16

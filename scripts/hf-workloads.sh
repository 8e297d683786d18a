# Sourced by the GPU scripts: the workload variants and a clock.
#   argv_of VARIANT    the workload's arguments (eager, static, large, moe: transformers
#                      generate(); moeworker: moe in a spawned worker process;
#                      generate(); loop: a hand-written prefill + decode loop, no generate();
#                      lead: eager, profiled with the README's lead command; spec: speculative
#                      decoding, generate(assistant_model=...); compile: a decode loop over
#                      torch.compile(mode="reduce-overhead"); split: eager llama with its
#                      model split across two GPUs in one process, which needs two)
#   capture_of VARIANT the range nsys is gated on (prefill for lead, else $CAPTURE or decode)
#   now                seconds since the epoch, with nanoseconds
#   secs T0 T1         T1 - T0 in seconds, one decimal
#   stamp              copies stdin to stdout, each line behind the seconds since it started
hf_workload=examples/workloads/hf_generate.py
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
stamp() { python3 -c '
import sys, time
t0 = time.time()
for line in sys.stdin:
    sys.stdout.write(f"{time.time()-t0:7.2f} {line[:200]}")
    sys.stdout.flush()'; }
argv_of() {
  case $1 in
    eager) echo "$hf_workload --arch qwen2" ;;
    static) echo "$hf_workload --arch qwen2 --static" ;;
    large) echo "$hf_workload --large --batch 8 --prompt-len 1024 --new-tokens 8" ;;
    moe) echo "$hf_workload --arch mixtral --layers 4 --batch 4 --prompt-len 256 --new-tokens 8" ;;
    loop) echo "examples/workloads/tiny_llm.py --new-tokens 16" ;;
    moeworker) echo "examples/workloads/in_worker.py $hf_workload --arch mixtral --layers 4 --batch 4 --prompt-len 256 --new-tokens 8" ;;
    lead) echo "$hf_workload --arch qwen2" ;;
    spec) echo "$hf_workload --arch qwen2 --batch 1 --assistant-layers 2 --new-tokens 32" ;;
    compile) echo "$hf_workload --arch qwen2 --compile --new-tokens 32" ;;
    split) echo "$hf_workload --arch llama --split-gpus" ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}
capture_of() {
  case $1 in
    lead) echo prefill ;;
    *) echo "${CAPTURE:-decode}" ;;
  esac
}

# Sourced by the GPU scripts: the transformers generate() workload variants and a clock.
#   argv_of VARIANT    the workload's arguments (eager, static, large, moe)
#   now                seconds since the epoch, with nanoseconds
hf_workload=examples/workloads/hf_generate.py
now() { date +%s.%N; }
argv_of() {
  case $1 in
    eager) echo "$hf_workload --arch qwen2" ;;
    static) echo "$hf_workload --arch qwen2 --static" ;;
    large) echo "$hf_workload --large --batch 8 --prompt-len 1024 --new-tokens 8" ;;
    moe) echo "$hf_workload --arch mixtral --layers 4 --batch 4 --prompt-len 256 --new-tokens 8" ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}

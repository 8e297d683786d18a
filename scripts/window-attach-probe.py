"""Probe (not a test): kernels outside and inside a cudaProfilerStart/Stop window, to tell which
of an attached ncu's options gate on the window (`ncu --mode=launch` held, then `ncu --mode=attach
--profile-from-start off --launch-count 1`: profiles the window's `add`, not the `fill` before it).

    python3 scripts/window-attach-probe.py
"""
import torch
x = torch.ones(1000, device="cuda")
for _ in range(3):
    y = x * 2
torch.cuda.synchronize()
torch.cuda.profiler.start()
z = x + 1
torch.cuda.synchronize()
torch.cuda.profiler.stop()
w = x.sqrt()
torch.cuda.synchronize()
print("done")

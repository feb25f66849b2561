"""Can this process use the GPU through a running CUDA MPS server? Exit 0 if yes.

    python benchmarks/mps_probe.py      # benchmarks/gpu_set.sh and gpu_mps.sh start two at once

Takes what a training run takes: memory in growable segments (PYTORCH_CUDA_ALLOC_CONF, set by the
caller), a bf16 matrix product, and a CUDA graph whose replay must add exactly once (the capture
itself runs nothing, so the replay's effect is read against the value just before it).
"""

import torch

x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
product = (x @ x).float().abs().sum()
buf = torch.zeros(1 << 20, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
    buf.add_(1)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    buf.add_(1)
torch.cuda.synchronize()
before = float(buf[0])
graph.replay()
torch.cuda.synchronize()
after = float(buf[0])
assert torch.isfinite(product) and after == before + 1, (float(product), before, after)
print(f"probe ok: graph replay {before:g} -> {after:g}")

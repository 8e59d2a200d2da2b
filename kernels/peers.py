# peers.py -- peer timings for bench_kernels on the same GPU, same run: copy bandwidth,
# fp16 GEMM rate and PyTorch SDPA (flash, cuDNN) on the reference shapes (12 q / 2 kv heads,
# D=256, fp16, non-causal as in shared/bench/peers_sdpa.py). Prints "key value" lines
# (ms unless named otherwise) on stdout; progress on stderr. --copy-only: the copy line alone.
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

def log(*a):
    print(*a, file=sys.stderr, flush=True)

def bench(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]

dev = 'cuda'
log(torch.__version__, torch.cuda.get_device_name())
x = torch.empty(4 * 1024**3, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
t = bench(lambda: y.copy_(x), 10)
print('copy_TBps', 2 * x.numel() / t / 1e9, flush=True)
del x, y
if '--copy-only' in sys.argv:  # the ceiling alone (~5 s); the caller appends older peer rows
    sys.exit(0)
a = torch.randn(8192, 8192, device=dev, dtype=torch.float16); b = torch.randn(8192, 8192, device=dev, dtype=torch.float16)
print('gemm_tflops', 2 * 8192**3 / bench(lambda: a @ b, 10) / 1e9, flush=True)
del a, b
H, KH, D = 12, 2, 256
shapes = [(1, 240000), (5, 240000), (16, 240000), (1, 131072), (784, 104000), (2048, 131072)]
for name, backend in [('flash', SDPBackend.FLASH_ATTENTION), ('cudnn', SDPBackend.CUDNN_ATTENTION)]:
    for (ql, ctx) in shapes:
        q = torch.randn(1, H, ql, D, device=dev, dtype=torch.float16)
        k = torch.randn(1, KH, ctx, D, device=dev, dtype=torch.float16)
        v = torch.randn(1, KH, ctx, D, device=dev, dtype=torch.float16)
        try:
            with sdpa_kernel([backend]):
                ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
            print(f'{name}_q{ql}_{ctx}', ms, flush=True)
        except Exception as ex:
            log(name, ql, ctx, 'failed:', str(ex).splitlines()[0][:120])

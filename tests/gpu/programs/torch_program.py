"""PyTorch under `tandem run`: torch.compile (Inductor, Triton kernels, CUDA graphs through
mode="reduce-overhead") and an explicitly captured training step replayed with torch.cuda.graph.

Exact part: integer-valued weights and inputs small enough that every product and sum is exact in
fp32, so the outputs do not depend on the kernels or the cuBLAS algorithm. Approximate part: a few
training steps on normal random data (losses and a parameter norm), compared with a tolerance.
"""
import os
import sys

# Deterministic cuBLAS (with torch.use_deterministic_algorithms); set before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

from program_output import checksum, emit, skip  # noqa: E402


def integer_tensor(shape, generator):
    return torch.randint(-2, 3, shape, generator=generator, device="cuda").to(torch.float32)


def exact_part(generator):
    digest, ok = {}, True
    # A matmul chain: sums of at most 256 products of values up to 2 (first layer), then up to
    # 1024 * 2 * 256: far below 2^24, so exact in fp32.
    w1 = integer_tensor((256, 256), generator)
    w2 = integer_tensor((256, 64), generator)
    x = integer_tensor((128, 256), generator)

    def net(x):
        return torch.relu(x @ w1) @ w2 + 1.0

    eager = net(x)
    reference = (torch.relu(x.cpu().long() @ w1.cpu().long()) @ w2.cpu().long() + 1).to(torch.float32)
    ok &= torch.equal(eager.cpu(), reference)
    digest["eager"] = checksum(eager.cpu().numpy().tobytes())

    # torch.compile with CUDA graphs (cudagraph trees): recorded on an early call, replayed after.
    compiled = torch.compile(net, mode="reduce-overhead")
    outputs = []
    for step in range(4):
        y = compiled(x + float(step))
        outputs.append(y.clone())
    for step, y in enumerate(outputs):
        expected = net(x + float(step))
        ok &= torch.equal(y, expected)
    digest["compiled"] = [checksum(y.cpu().numpy().tobytes()) for y in outputs]
    return digest, ok


def approx_part(generator):
    torch.manual_seed(18)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    static_x = torch.randn(64, 128, device="cuda", generator=generator)
    static_y = torch.randint(0, 10, (64,), device="cuda", generator=generator)
    batches = [(torch.randn(64, 128, device="cuda", generator=generator),
                torch.randint(0, 10, (64,), device="cuda", generator=generator)) for _ in range(6)]

    # Warm-up on a side stream before capture, as torch.cuda.graph requires.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        optimizer.step()
    losses = []
    for x, y in batches:
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        losses.append(static_loss.item())
    norm = torch.sqrt(sum((p.detach().double() ** 2).sum() for p in model.parameters())).item()
    finite = all(v == v and abs(v) < 1e6 for v in losses + [norm])
    return {"graph_losses": losses, "parameter_norm": [norm]}, finite


def main():
    if not torch.cuda.is_available():
        return skip("torch", "torch " + torch.__version__ + " sees no CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # Warn, not fail, where an op has no deterministic kernel: the exact part does not depend on it.
    torch.use_deterministic_algorithms(True, warn_only=True)
    generator = torch.Generator(device="cuda")
    generator.manual_seed(18)
    digest, exact_ok = exact_part(generator)
    approx, approx_ok = approx_part(generator)
    digest["torch"] = torch.__version__.split("+")[0]
    return emit("torch", digest, approx, ok=exact_ok and approx_ok)


if __name__ == "__main__":
    sys.exit(main())

"""BitMarkLogitsProcessor (issue 37): torch in, torch out on the input's device and dtype;
numpy in, numpy out; the rule of BitMarkWatermark; inside a torch bitwise AR loop."""

import numpy as np
import pytest
import torch

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.watermark import BitMarkDetector, BitMarkLogitsProcessor, BitMarkWatermark

D = 8  # bits per token


class TinyBitwiseAR(torch.nn.Module):
    """Bit k of a token: a logit pair from the bits drawn so far and the bit index."""

    def __init__(self, d=D, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.d = d
        self.weight = torch.nn.Parameter(torch.randn(2 * d, 2, generator=g))
        self.bias = torch.nn.Parameter(torch.randn(d, 2, generator=g))

    def forward(self, bits, k):
        mask = (torch.arange(self.d, device=bits.device) < k).to(self.weight.dtype)
        onehot = torch.nn.functional.one_hot(torch.tensor(k, device=bits.device), self.d)
        feat = torch.cat([bits.to(self.weight.dtype) * mask,
                          onehot.to(self.weight.dtype).expand(bits.shape[0], -1)], dim=-1)
        return feat @ self.weight + self.bias[k]


@torch.no_grad()
def sample_bits(model, n_images, n_tokens, processor=None, seed=0, device="cpu"):
    """Bitwise AR sampling: all tokens in parallel, bits of a token in index order."""
    g = torch.Generator(device=device).manual_seed(seed)
    bits = torch.zeros(n_images * n_tokens, model.d, dtype=torch.long, device=device)
    for k in range(model.d):
        logits = model(bits, k)
        if processor is not None:
            out = processor(bits[:, :k], logits)
            assert isinstance(out, torch.Tensor) and out.device == logits.device
            assert out.dtype == logits.dtype
            logits = out
        probs = torch.softmax(logits, dim=-1)
        bits[:, k] = torch.multinomial(probs, 1, generator=g)[:, 0]
    return bits.reshape(n_images, n_tokens, model.d)


def test_processor_inside_a_torch_bitwise_ar_loop():
    model = TinyBitwiseAR().double()
    proc = BitMarkLogitsProcessor(delta=2.0)
    clean_cal = sample_bits(model, 300, 16, seed=1).numpy()
    clean = sample_bits(model, 300, 16, seed=2).numpy()
    marked = sample_bits(model, 300, 16, processor=proc, seed=3).numpy()
    det = BitMarkDetector().fit(clean_cal)
    assert det.green_fraction(marked).mean() > det.green_fraction(clean).mean() + 0.1
    y = np.r_[np.zeros(300), np.ones(300)]
    s = np.r_[det.score_samples(clean), det.score_samples(marked)]
    assert tpr_at_fpr(y, s, fpr=0.01) >= 0.95
    assert det.predict(clean).mean() <= 0.03


@pytest.mark.parametrize("green, first", [(("01", "10"), None), (("01", "10"), 2),
                                          (("000", "101", "110"), None), (("1",), None)])
def test_processor_is_the_rule_of_bitmark_watermark(green, first):
    rng = np.random.default_rng(0)
    wm = BitMarkWatermark(green=green, delta=1.5, first_biased_bit=first)
    proc = BitMarkLogitsProcessor(green=green, delta=1.5, first_biased_bit=first)
    np.testing.assert_array_equal(proc.bias_table_, wm.bias_table_)
    for k in range(0, 6):
        prefix = rng.integers(0, 2, (20, k))
        logits = rng.normal(size=(20, 2))
        if k < wm.n_gram_ - 1:
            continue
        expected = wm(prefix, logits)
        np.testing.assert_allclose(proc(prefix, logits), expected)
        out = proc(torch.as_tensor(prefix), torch.as_tensor(logits))
        np.testing.assert_allclose(out.numpy(), expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64])
def test_torch_dtype_is_preserved(dtype):
    proc = BitMarkLogitsProcessor()
    logits = torch.zeros(3, 5, 2, dtype=dtype)        # leading batch dimensions
    prefix = torch.tensor([[[0], [1], [0], [1], [1]]] * 3)
    out = proc(prefix, logits)
    assert out.dtype == dtype and out.shape == logits.shape
    np.testing.assert_array_equal(out[0, :, 1].float().numpy(), [2, 0, 2, 0, 0])
    assert torch.count_nonzero(logits) == 0             # input not modified


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numpy_in_numpy_out(dtype):
    out = BitMarkLogitsProcessor()(np.array([[1, 0]]), np.zeros((1, 2), dtype=dtype))
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    np.testing.assert_array_equal(out, [[0, 2]])


def test_torch_bits_with_array_logits_give_a_tensor():
    proc = BitMarkLogitsProcessor()
    out = proc(torch.tensor([[0], [1]]), np.zeros((2, 2), dtype=np.float32))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), [[0, 2], [2, 0]])
    out = proc(np.array([[0], [1]]), torch.zeros(2, 2, dtype=torch.float64))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64


def test_torch_device_is_preserved_meta():
    # the meta device stands in for an accelerator on CPU-only machines: no data is
    # ever copied to the host
    proc = BitMarkLogitsProcessor()
    logits = torch.zeros(4, 2, device="meta")
    out = proc(torch.zeros(4, 3, dtype=torch.long, device="meta"), logits)
    assert out.device.type == "meta" and out.shape == (4, 2) and out.dtype == logits.dtype


def test_unbiased_bits_and_validation():
    proc = BitMarkLogitsProcessor(first_biased_bit=2)
    logits = torch.ones(2, 2)
    out = proc(torch.zeros(2, 1, dtype=torch.long), logits)
    assert torch.equal(out, logits) and out is not logits
    with pytest.raises(ValueError, match="same leading dimensions"):
        proc(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="delta"):
        BitMarkLogitsProcessor(delta=-1.0)(np.zeros((1, 1)), np.zeros((1, 2)))


@pytest.mark.gpu
def test_processor_keeps_cuda_tensors_on_the_device():
    proc = BitMarkLogitsProcessor(delta=2.0)
    model = TinyBitwiseAR().cuda()
    bits = sample_bits(model, 20, 16, processor=proc, seed=0, device="cuda")
    assert bits.device.type == "cuda"
    logits = torch.zeros(8, 2, device="cuda", dtype=torch.float16)
    out = proc(torch.ones(8, 3, dtype=torch.long, device="cuda"), logits)
    assert out.device == logits.device and out.dtype == torch.float16
    cpu = proc(torch.ones(8, 3, dtype=torch.long), logits.cpu())
    assert torch.equal(out.cpu(), cpu)
    mixed = proc(torch.ones(8, 3, dtype=torch.long, device="cuda"), np.zeros((8, 2)))
    assert mixed.device.type == "cuda"

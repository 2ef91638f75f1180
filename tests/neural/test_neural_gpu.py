"""CUDA checks of the torch parts (spec 7.6.2); skipped without CUDA by tests/conftest.py."""

import copy

import pytest
import torch
from torch import nn

from sklearn_cispa.neural import NanoAdam, apply_sign_in, merge_sign_in, reset_sign_in
from sklearn_cispa.pruning import prune_at_init

pytestmark = pytest.mark.gpu


def _mlp(seed=0, sizes=(64, 256, 256, 10)):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _step(net, opt, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 64, generator=g).to(device)
    opt.zero_grad()
    net(x).pow(2).mean().backward()
    opt.step()


def test_nanoadam_on_cuda_matches_cpu_state_and_freezes_entries():
    cpu = _mlp()
    gpu = copy.deepcopy(cpu).cuda()
    opt_c = NanoAdam([{"params": list(cpu.parameters()), "dense": False}], lr=1e-2)
    opt_g = NanoAdam([{"params": list(gpu.parameters()), "dense": False}], lr=1e-2)
    before = [p.detach().clone() for p in gpu.parameters()]
    _step(cpu, opt_c, "cpu")
    _step(gpu, opt_g, "cuda")
    assert opt_g.state_bytes() == opt_c.state_bytes()
    for p, p0 in zip(gpu.parameters(), before):
        st = opt_g.state[p]
        assert st["indices"].device == p.device and st["exp_avg"].device == p.device
        outside = torch.ones(p.numel(), dtype=torch.bool, device=p.device)
        outside[st["indices"].long()] = False  # int16/int32 in the state
        assert torch.equal(p.detach().reshape(-1)[outside], p0.reshape(-1)[outside])


def test_prune_at_init_masks_across_devices():
    cpu = _mlp(1)
    gpu = copy.deepcopy(cpu).cuda()
    X, y = torch.randn(128, 64), torch.randint(0, 10, (128,))
    for method in ["random", "snip", "synflow"]:
        mc = prune_at_init(cpu, method, 0.9, X=X, y=y, random_state=0)
        mg = prune_at_init(gpu, method, 0.9, X=X.cuda(), y=y.cuda(), random_state=0)
        assert all(m.device.type == "cuda" for m in mg.values())
        agree = sum(int((mc[k] == mg[k].cpu()).sum()) for k in mc)
        total = sum(m.numel() for m in mc.values())
        if method == "random":
            assert agree == total
        else:
            assert agree / total >= 0.99
    masks = prune_at_init(gpu, "grasp", 0.9, X=X.cuda(), y=y.cuda())
    assert sum(int(m.sum()) for m in masks.values()) == 84_480 - round(0.9 * 84_480)


def test_sign_in_on_cuda():
    net = _mlp(2).cuda()
    masks = prune_at_init(net, "random", 0.8, random_state=0)
    apply_sign_in(net, masks)
    assert net[0].parametrizations.weight[0].mask.device.type == "cuda"
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for t in range(5):
        _step(net, opt, "cuda", seed=t)
    theta = net[0].weight.detach().clone()
    reset_sign_in(net, opt)
    plist = net[0].parametrizations.weight
    m, w = plist.original0, plist.original1
    assert torch.allclose(net[0].weight, theta, rtol=1e-6, atol=1e-7)
    assert torch.allclose(m**2 - w**2, torch.ones_like(m), rtol=1e-5)
    x = torch.randn(16, 64, device="cuda")
    with torch.no_grad():
        before = net(x)
    merge_sign_in(net)
    with torch.no_grad():
        assert torch.allclose(net(x), before, atol=1e-5)
    assert (net[0].weight[~masks["0.weight"]] == 0).all()

"""tandem.torch without a GPU: what each policy token becomes in PyTorch, and what is refused.

Needs a PyTorch built with NCCL (ProcessGroupNCCL.Options exists without a GPU); skipped otherwise.
"""
import warnings

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_nccl_available():
    pytest.skip("this PyTorch has no NCCL backend", allow_module_level=True)

import tandem  # noqa: E402
import tandem.torch as tt  # noqa: E402
from tandem.torch import fsdp, routes  # noqa: E402

# NCCL's documented values (nccl.h): NCCL_CTA_POLICY_EFFICIENCY 1, NCCL_CTA_POLICY_ZERO 2.
HAS_CTA_POLICY = hasattr(dist.ProcessGroupNCCL.Options().config, "cta_policy")


def test_priority():
    assert tt.process_group_options("priority").is_high_priority_stream is True
    assert tt.process_group_options("concurrent").is_high_priority_stream is False


def test_nccl_ctas_and_cga():
    options = tt.process_group_options("nccl-ctas:2..6+nccl-cga:2")
    assert (options.config.min_ctas, options.config.max_ctas, options.config.cga_cluster_size) == (2, 6, 2)
    assert options.is_high_priority_stream is False


def test_unset_fields_stay_pytorchs_default():
    default = dist.ProcessGroupNCCL.Options().config
    options = tt.process_group_options("nccl-ctas:..16")
    assert options.config.max_ctas == 16
    assert options.config.min_ctas == default.min_ctas
    assert options.config.cga_cluster_size == default.cga_cluster_size


def test_copy_engine_leaves_the_groups_cta_policy_alone():
    # The route's lanes get CTA policy zero; the group keeps NCCL's default for what the route refuses.
    default = dist.ProcessGroupNCCL.Options().config
    assert tt.process_group_options("copy-engine").config.cta_policy == default.cta_policy


# An explicit CTA policy reaches the group beside copy-engine too (its zero is the lanes' own), as the
# interposer writes it into a program's communicators.
@pytest.mark.parametrize("text,value", [("nccl-cta-policy:efficiency", 1), ("nccl-cta-policy:zero", 2),
                                        ("copy-engine+nccl-cta-policy:zero", 2),
                                        ("copy-engine+nccl-cta-policy:efficiency", 1)])
def test_cta_policy(text, value):
    if HAS_CTA_POLICY:
        assert tt.process_group_options(text).config.cta_policy == value
    else:
        with pytest.raises(RuntimeError, match="cta_policy"):
            tt.process_group_options(text)


def test_a_policy_file(tmp_path):
    path = tmp_path / "best.policy"
    path.write_text("priority+nccl-cga:1\n")
    options = tt.process_group_options(path)
    assert options.is_high_priority_stream is True and options.config.cga_cluster_size == 1


@pytest.mark.parametrize("text,token,pointer", [
    ("shape:3+priority", "shape:3", "tandem run --policy shape:3+priority -- "),
    ("shape:auto", "shape:auto", "tandem run"),
    ("shape:48KiB", "shape:48KiB", "tandem run"),
    ("green:66", "green:66", "green_contexts"),
    ("sequential", "sequential", "NCCL's own streams"),
    ("comm-first", "comm-first", "launch order"),
    ("nccl-symmetric", "nccl-symmetric", "windows"),
])
def test_refused_everywhere(text, token, pointer):
    calls = [
        lambda: tt.process_group_options(text),
        lambda: tt.init_process_group(text),
        lambda: tt.register_ddp_hook(object(), text),
        lambda: tt.install_fsdp_collectives(object(), text),
        lambda: tt.apply_process_settings(text),
    ]
    for call in calls:
        with pytest.raises(ValueError) as caught:
            call()
        assert token in str(caught.value) and pointer in str(caught.value)
    assert not dist.is_initialized()


def test_bad_policy_is_tandems_message():
    with pytest.raises(ValueError, match="unknown policy token 'priorty'"):
        tt.init_process_group("priorty")
    assert not dist.is_initialized()


def test_init_refuses_what_it_cannot_honour():
    with pytest.raises(ValueError, match="backend 'gloo'"):
        tt.init_process_group("priority", backend="gloo")
    with pytest.raises(TypeError, match="process_group_options"):
        tt.init_process_group("priority", pg_options=dist.ProcessGroupNCCL.Options())
    assert not dist.is_initialized()


def test_fsdp_without_copy_engine_installs_nothing():
    class FakeFSDPModule:
        def set_custom_all_gather(self, comm):
            raise AssertionError("nothing may be installed")

        set_custom_reduce_scatter = set_custom_all_gather

    assert tt.install_fsdp_collectives(FakeFSDPModule(), "priority") == tandem.parse_policy("priority")
    with pytest.raises(TypeError, match="not an FSDP2 module"):
        tt.install_fsdp_collectives(torch.nn.Linear(2, 2), "priority")


class Device:
    """torch.cuda.get_device_properties' answer, for a machine without a GPU."""

    def __init__(self, sms):
        self.multi_processor_count = sms


@pytest.fixture
def carveout(monkeypatch):
    """The SM carveout tandem.torch sets, on a stand-in device of 132 SMs (an H200's)."""
    set_to = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Device(132))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "a 132-SM GPU")
    monkeypatch.setattr(torch._C, "_set_sm_carveout_experimental", set_to.append, raising=False)
    return set_to


def test_sm_target_leaves_the_gemms_that_many_sms(carveout):
    with pytest.warns(RuntimeWarning, match="applied to every GEMM"):
        policy = tt.apply_process_settings("sm-target:100+priority", device=0)
    assert policy == tandem.parse_policy("priority+sm-target:100")
    assert carveout == [32]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the always-on form asked for: nothing to warn about
        tt.apply_process_settings("sm-target:132+compute-always", device=0)
    assert carveout == [32, 0]
    # No sm-target: the carveout is left alone.
    tt.apply_process_settings("priority", device=0)
    assert carveout == [32, 0]
    with pytest.raises(ValueError, match="sm-target:133 is more than the 132 SMs"):
        tt.apply_process_settings("sm-target:133", device=0)
    assert carveout == [32, 0]


def test_init_process_group_checks_the_device_it_is_given_before_the_group(carveout, monkeypatch):
    """sm-target is checked and its carveout computed on device_id's GPU, before the group exists (a refused
    policy creates none); the carveout is set once the group is there, and the group gets the options."""
    asked, created = [], []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: asked.append(device) or Device(132))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 7)
    monkeypatch.setattr(dist, "init_process_group",
                        lambda **kwargs: created.append((kwargs, list(carveout))))
    device = torch.device("cuda", 1)
    with pytest.raises(ValueError, match="sm-target:133 is more than the 132 SMs"):
        tt.init_process_group("sm-target:133+compute-always", device_id=device)
    assert created == [] and carveout == [] and asked == [device]
    policy = tt.init_process_group("priority+sm-target:100+compute-always", device_id=device, rank=0, world_size=1)
    assert policy == tandem.parse_policy("priority+sm-target:100+compute-always")
    assert asked == [device, device]
    [(kwargs, carveout_then)] = created
    assert carveout_then == [] and carveout == [32]  # set after the group was created
    assert kwargs["backend"] == "nccl" and kwargs["device_id"] == device and kwargs["rank"] == 0
    assert kwargs["pg_options"].is_high_priority_stream
    # Without device_id, the current device's.
    tt.init_process_group("sm-target:100+compute-always")
    assert asked[-1] == 7


def test_nccl_version_codes():
    # NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9; torch.cuda.nccl.version() gives a tuple.
    assert routes._nccl_version_code((2, 28, 9)) == 22809
    assert routes._nccl_version_code((2, 21, 5)) == 22105
    assert routes._nccl_version_code(22809) == 22809


class Mesh:
    """A DeviceMesh's get_group: FSDP shards over its last dimension (HSDP: (replicate, shard))."""

    def __init__(self, *groups):
        self.groups = groups
        self.ndim = len(groups)

    def get_group(self, dim):
        return self.groups[dim]


def test_fsdp_shards_over_the_meshs_last_dimension():
    class Parameter:
        def __init__(self, mesh):
            self.device_mesh = mesh

    class Module:
        def __init__(self, *parameters):
            self._parameters = parameters

        def parameters(self):
            return iter(self._parameters)

    assert fsdp._fsdp_shard_group(Module(Parameter(Mesh("replicate", "shard")))) == "shard"
    assert fsdp._fsdp_shard_group(Module(Parameter(Mesh("shard")))) == "shard"
    assert fsdp._fsdp_shard_group(Module(object(), Parameter(Mesh("a", "b")))) == "b"
    assert fsdp._fsdp_shard_group(Module()) is None

"""tandem (no PyTorch, no GPU): policies through tandem's C++ parser."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tandem
import tandem._core

# tandem's own errors end in " [file.cpp:line]"; a user's error must not.
LOCATION = re.compile(r"\[[\w/.]+\.(cpp|cu|h):\d+\]")


def test_fields_of_a_parsed_policy():
    p = tandem.parse_policy("shape:3+priority+sm-target:100+nccl-ctas:2..6+nccl-cga:2")
    assert p.comm_priority is True
    assert p.shape == "shape:3"
    assert p.sm_target == 100
    assert (p.nccl_min_ctas, p.nccl_max_ctas, p.nccl_cga_cluster_size) == (2, 6, 2)
    assert p.order == "concurrent"
    assert p.nccl_cta_policy is None and p.green_sms is None
    assert not p.copy_engine and not p.nccl_symmetric


def test_defaults_of_the_empty_combination():
    p = tandem.parse_policy("concurrent")
    assert (p.order, p.comm_priority, p.shape, p.sm_target) == ("concurrent", False, None, None)
    assert p.nccl_config == {}


@pytest.mark.parametrize("text,order", [("sequential", "sequential"), ("comm-first", "comm-first"),
                                        ("priority", "concurrent")])
def test_launch_order(text, order):
    assert tandem.parse_policy(text).order == order


# NCCL's documented values: NCCL_CTA_POLICY_EFFICIENCY 1, NCCL_CTA_POLICY_ZERO 2 (nccl.h).
@pytest.mark.parametrize("text,fields", [
    ("priority", {}),
    ("nccl-ctas:8", {"minCTAs": 8, "maxCTAs": 8}),
    ("nccl-ctas:2..6", {"minCTAs": 2, "maxCTAs": 6}),
    ("nccl-ctas:4..", {"minCTAs": 4}),
    ("nccl-ctas:..16", {"maxCTAs": 16}),
    ("nccl-cga:1", {"cgaClusterSize": 1}),
    ("nccl-cta-policy:efficiency", {"CTAPolicy": 1}),
    ("nccl-cta-policy:zero", {"CTAPolicy": 2}),
    # Copy-engine collectives need CTA policy zero.
    ("copy-engine", {"CTAPolicy": 2}),
    ("shape:auto+sm-target:64", {}),
])
def test_nccl_config_per_token(text, fields):
    assert tandem.parse_policy(text).nccl_config == fields


# What a process group takes: the fields a program's communicators get, with PyTorch's names for them (the
# token table's NCCL facts). copy-engine's CTA policy zero is its lanes' alone.
@pytest.mark.parametrize("text,config", [
    ("priority", []),
    ("nccl-ctas:2..6+nccl-cga:1", [("minCTAs", "min_ctas", 2), ("maxCTAs", "max_ctas", 6),
                                   ("cgaClusterSize", "cga_cluster_size", 1)]),
    ("nccl-cta-policy:zero", [("CTAPolicy", "cta_policy", 2)]),
    ("copy-engine", []),
    ("copy-engine+nccl-cta-policy:efficiency", [("CTAPolicy", "cta_policy", 1)]),
])
def test_process_group_config_per_token(text, config):
    assert tandem.parse_policy(text).process_group_config == config


def test_the_nccl_facts_of_each_token():
    rows = {(r["token"], r["config_field"]): r for r in tandem._core.nccl_fields()}
    assert list(rows) == [("nccl-ctas", "minCTAs"), ("nccl-ctas", "maxCTAs"), ("nccl-cga", "cgaClusterSize"),
                          ("nccl-cta-policy", "CTAPolicy"), ("copy-engine", "CTAPolicy")]
    assert rows[("nccl-ctas", "maxCTAs")] == {"token": "nccl-ctas", "config_field": "maxCTAs",
                                              "variable": "NCCL_MAX_CTAS", "min_version": 21700,
                                              "pytorch_option": "max_ctas", "scope": "program"}
    assert rows[("nccl-cta-policy", "CTAPolicy")]["min_version"] == 22700
    assert rows[("copy-engine", "CTAPolicy")]["scope"] == "own"


def test_text_round_trip_and_equality():
    p = tandem.parse_policy("nccl-ctas:8+priority")
    assert str(p) == "priority+nccl-ctas:8"
    assert p == tandem.parse_policy(str(p))
    assert hash(p) == hash(tandem.parse_policy("priority+nccl-ctas:8"))
    assert p != tandem.parse_policy("priority")
    assert repr(p) == "tandem.Policy('priority+nccl-ctas:8')"


def test_read_only():
    p = tandem.parse_policy("priority")
    with pytest.raises(AttributeError):
        p.comm_priority = False
    with pytest.raises(TypeError):
        tandem.Policy()


@pytest.mark.parametrize("text,named", [("priorty", "priorty"), ("shape:3+shape:4", "shape"),
                                        ("nccl-cga:3", "3"), ("nccl-ctas:9..2", "9..2"), ("", "")])
def test_bad_policy_is_one_plain_line(text, named):
    with pytest.raises(ValueError) as caught:
        tandem.parse_policy(text)
    message = str(caught.value)
    assert named in message
    assert "\n" not in message
    assert not LOCATION.search(message), message


@pytest.mark.parametrize("text", ["pri\nority", "pri\x00ority", "\x1b[31mpriority", "p" * 100000])
def test_hostile_policy_text_is_one_printable_bounded_line(text):
    with pytest.raises(ValueError) as caught:
        tandem.parse_policy(text)
    message = str(caught.value)
    assert message.isprintable(), repr(message)
    assert len(message) < 2000
    assert "unknown policy token" in message or "invalid" in message


@pytest.mark.parametrize("call", [tandem.parse_policy, tandem.as_policy, tandem.load_policy_file])
@pytest.mark.parametrize("text,at", [("\ud800", 0), ("priority+\udcff", 9), ("/tmp/x\udc80.policy", 6)])
def test_a_lone_surrogate_is_named(call, text, at):
    with pytest.raises(ValueError) as caught:
        call(text)
    message = str(caught.value)
    assert f"character U+{ord(text[at]):04X} at position {at} is a lone surrogate, not text" in message
    assert message.isprintable() and len(message) < 2000, repr(message)


def test_comparing_with_another_type_is_not_an_error():
    p = tandem.parse_policy("priority")
    assert (p == "priority") is False
    assert p != "x"
    assert p != None  # noqa: E711
    assert p in [None, tandem.parse_policy("priority")]


def test_policy_files(tmp_path, monkeypatch):
    path = tmp_path / "best.policy"
    path.write_text("# written by tandem tune\n\npriority+nccl-ctas:16\n")
    expected = tandem.parse_policy("priority+nccl-ctas:16")
    assert tandem.load_policy_file(str(path)) == expected
    assert tandem.parse_policy(f"@{path}") == expected
    assert tandem.as_policy(path) == expected        # os.PathLike
    assert tandem.as_policy(str(path)) == expected   # a str with a '/'
    assert tandem.as_policy(expected) is expected
    # A bare name is policy text, even where a file of that name exists.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="best.policy"):
        tandem.as_policy("best.policy")
    with pytest.raises(TypeError):
        tandem.as_policy(3)


def test_unreadable_policy_file(tmp_path):
    missing = tmp_path / "none.policy"
    with pytest.raises(ValueError) as caught:
        tandem.as_policy(missing)
    assert str(missing) in str(caught.value) and not LOCATION.search(str(caught.value))
    two_lines = tmp_path / "two.policy"
    two_lines.write_text("priority\nshape:3\n")
    with pytest.raises(ValueError):
        tandem.as_policy(two_lines)


def test_help_lists_every_token():
    text = tandem.policy_help()
    for token in ("sequential", "comm-first", "priority", "shape:", "sm-target:", "nccl-ctas:", "nccl-cga:",
                  "nccl-cta-policy:", "green:", "nccl-symmetric", "copy-engine"):
        assert token in text


def test_version_is_the_cmake_projects():
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert tandem.__version__ == re.search(r"project\(tandem VERSION ([0-9.]+)", cmake).group(1)


def test_import_loads_neither_cuda_nor_nccl():
    # `import tandem` must not decide which libnccl.so.2 / libcudart a later `import torch` binds to.
    maps = subprocess.run([sys.executable, "-c", "import tandem; print(open('/proc/self/maps').read())"],
                          check=True, capture_output=True, text=True).stdout
    assert "_core" in maps
    assert "libnccl" not in maps and "libcudart" not in maps and "libcuda.so" not in maps


@pytest.mark.parametrize("text,refusal", [
    ("green:66+priority", "green:66 cannot be applied inside PyTorch: tandem cannot move PyTorch's kernels"),
    ("shape:3+priority", "run the program under `tandem run --policy shape:3+priority -- python ...` instead"),
    ("sequential", "sequential cannot be applied inside PyTorch: PyTorch puts its collectives on NCCL's own"),
    ("comm-first+copy-engine", "comm-first cannot be applied inside PyTorch"),
    ("nccl-symmetric", "cannot register them as NCCL windows"),
])
def test_pytorch_refusal_comes_from_the_token_table(text, refusal):
    assert refusal in tandem.parse_policy(text).pytorch_refusal


def test_what_pytorch_can_take_is_not_refused():
    for text in ("concurrent", "priority+nccl-ctas:8+nccl-cga:1", "sm-target:116+copy-engine",
                 "nccl-cta-policy:zero"):
        assert tandem.parse_policy(text).pytorch_refusal is None, text


def test_sm_carveout_leaves_gemms_the_target():
    assert tandem.parse_policy("sm-target:116").sm_carveout(132) == 16
    assert tandem.parse_policy("priority").sm_carveout(132) is None
    with pytest.raises(ValueError, match="sm-target:140 is more than the 132 SMs"):
        tandem.parse_policy("sm-target:140").sm_carveout(132)

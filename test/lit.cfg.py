import os
import lit.formats

config.name = "pimc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pimc_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "CMakeLists.txt"]

path = [os.path.join(config.pimc_tools_dir, "pimc-opt"),
        os.path.join(config.pimc_tools_dir, "pimc"),
        os.path.join(config.pimc_obj_root, "sim"),
        config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(path + [config.environment.get("PATH", "")])
config.substitutions.append(("%testdata", config.pimc_testdata_dir))
config.substitutions.append(("%python", config.system_python))
config.substitutions.append(("%pimc_src", config.pimc_src_root))
config.substitutions.append(("%targets", os.path.join(config.pimc_src_root, "targets")))
# shared/ sits beside the repository (specs, AttAcc traces).
shared = os.path.join(os.path.dirname(config.pimc_src_root), "shared")
config.substitutions.append(("%shared", shared))
if os.path.exists(os.path.join(shared, "traces", "attacc-gpt3-attention-bank.trace")):
    config.available_features.add("attacc-trace")

# Torch bridge (python/pimc_torch, docs/torch-bridge.md): the system Python with the repository's
# python/ directory on its path. torch.export exists from torch 2.1; the version is read from the
# package metadata (importing torch here would slow down every lit run).
config.substitutions.append(
    ("%pimc_torch", "env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=%s %s -m pimc_torch"
     % (os.path.join(config.pimc_src_root, "python"), config.system_python)))
import shutil
import subprocess
try:
    _torch_version = subprocess.run(
        [config.system_python, "-c",
         "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True, text=True, timeout=60).stdout.strip()
except (OSError, subprocess.SubprocessError):
    _torch_version = ""
_torch_major_minor = tuple(int(p) for p in _torch_version.split(".")[:2] if p.isdigit())
if len(_torch_major_minor) == 2 and _torch_major_minor >= (2, 1):
    config.available_features.add("torch-export")
# onnxruntime-node installed into <build>/npm (see docs/torch-bridge.md).
_ort = os.path.join(config.pimc_obj_root, "npm", "node_modules", "onnxruntime-node")
if os.path.isdir(_ort) and shutil.which("node"):
    config.available_features.add("onnxruntime")
    config.substitutions.append(("%ort_node_path", os.path.join(config.pimc_obj_root, "npm",
                                                               "node_modules")))

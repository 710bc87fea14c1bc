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
        os.path.join(config.pimc_tools_dir, "pimc-onnx-conformance"),
        os.path.join(config.pimc_obj_root, "sim"),
        config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(path + [config.environment.get("PATH", "")])
config.substitutions.append(("%testdata", config.pimc_testdata_dir))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%pimc_src", config.pimc_src_root))
config.substitutions.append(("%fuzz_bin", os.path.join(config.pimc_obj_root, "fuzz")))
config.substitutions.append(("%targets", os.path.join(config.pimc_src_root, "targets")))
# The torch bridge (python/pimc_torch, docs/torch-bridge.md) runs in the project's Python
# environment (build/venv, pinned by python/requirements.txt), where pimc_torch is installed.
# Every package is required: a missing one fails test/Python/environment.test, never skips.
config.substitutions.append(
    ("%pimc_torch", "env PYTHONDONTWRITEBYTECODE=1 %s -m pimc_torch" % config.python))

"""pimc_torch: export plain PyTorch modules to the pimc-fx-graph JSON + safetensors format.

    import pimc_torch
    pimc_torch.export(module, (x,), "out/")      # out/graph.json + out/graph.safetensors

See docs/torch-bridge.md and docs/frontend-graphs.md.
"""

from .graph_format import ExportError, GraphFormatError  # noqa: F401

_EXPORTER_API = ("export", "export_onnx", "has_torch_export", "trace")


def __getattr__(name):
    # torch is imported on first use, so `python3 -m pimc_torch check` reports format errors
    # without paying for it.
    if name in _EXPORTER_API:
        from . import exporter
        return getattr(exporter, name)
    raise AttributeError("module 'pimc_torch' has no attribute %r" % name)


__all__ = ["ExportError", "GraphFormatError"] + list(_EXPORTER_API)

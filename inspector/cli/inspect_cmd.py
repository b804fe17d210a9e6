"""`mnnscope inspect MODEL`: what is in a model file."""
from __future__ import annotations

from mnnscope.inspector.cli.app import eprint, print_json
from mnnscope.inspector.inputs.data import dim_values, free_input_sizes, input_specs, parse_shape_option
from mnnscope.inspector.formats.adapter import shapes_note
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.model.flops import estimate_flops_detail


def add_parser(sub) -> None:
    p = sub.add_parser("inspect", help="summarise a model (.onnx, .mnn, or a format named in MNNSCOPE_FORMATS)")
    p.add_argument("model", help="path to a model file (.onnx, .mnn, ...) or a model folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-shapes", action="store_true",
                   help="skip shape inference (no runner process; shapes only as stored in the file)")
    p.add_argument("--shape", action="append", metavar="NAME=DIMS",
                   help="size of an .mnn input with free dims for computing shapes, e.g. input_ids=1,32 "
                        "(repeatable; other free dims get the defaults: batch 1, sequence 8, image 64)")
    p.set_defaults(func=run)


def summarize(graph, shapes: dict | None = None) -> dict:
    # FLOPs at the sizes the inputs are run at (--shape, else the documented defaults: batch 1, sequence 8, image
    # 64), as the window's Properties counts them at the Inputs dock's: a model with free dims was "unknown"
    specs = input_specs(graph)
    sizes, _ = free_input_sizes([s for s in specs if s["shape"] is not None], shapes or {})
    at = dim_values(specs, sizes)
    # (uncounted: why an unknown is unknown, the operators with a counting rule whose shapes are not known here)
    flops, _, uncounted = estimate_flops_detail(graph, at)
    sub_nodes = sum(sub.node_count for _, _, sub in graph.subgraphs())
    out = {
        "format": graph.format,
        "path": graph.path,
        "nodes": graph.node_count,
        "subgraph_nodes": sub_nodes,
        "subgraphs": sum(1 for _ in graph.subgraphs()),
        "edges": graph.g.number_of_edges(),
        "op_types": graph.op_types(),
        "inputs": graph.io_signature(graph.inputs),
        "outputs": graph.io_signature(graph.outputs),
        "params": graph.params(),
        "weight_bytes": graph.weight_bytes(),
        "flops": flops,
        "flops_at": (at or None) if flops is not None else None,
        "flops_uncounted": uncounted,
        "sizes": at or {},  # the sizes of the inputs' free dims the shapes and FLOPs are counted at
        "scopes": len(graph.top_scopes()),
        # "metadata": the exporter's module paths (torch dynamo's node metadata); "names": "/a/b/Op" names
        "scopes_from": graph.meta.get("scopes_from", "names"),
        "opset": graph.opset,
        "version": graph.version,
        "producer": graph.producer,
        "warnings": graph.warnings,
        "shapes_for_inputs": graph.meta.get("shapes_for_inputs"),
    }
    if "llm_config" in graph.meta:  # an MNN-LLM export folder (formats/llm_folder.py)
        out.update({k: graph.meta.get(k) for k in ("llm_config", "llm_quant", "fused_attention", "model_file")})
    return out


def _fmt_count(n) -> str:
    if n is None:
        return "unknown"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)


def _sig(items) -> str:
    return ", ".join(f"{i['name']} {i['dtype'] or '?'}{i['shape'] if i['shape'] is not None else '[?]'}" for i in items)


def run(args) -> int:
    shapes = parse_shape_option(args.shape)
    graph = load_model(args.model, native=not args.no_shapes, input_shapes=shapes)
    s = summarize(graph, shapes)
    if args.json:
        print_json(s)
    else:
        print(f"{s['path']}  ({s['format']}{', ' + s['producer'] if s['producer'] else ''})")
        sub = f" (+{s['subgraph_nodes']} in {s['subgraphs']} subgraphs)" if s["subgraphs"] else ""
        print(f"  operators {s['nodes']}{sub}, edges {s['edges']}, top-level scopes {s['scopes']}"
              + (" (from node metadata)" if s["scopes_from"] == "metadata" else ""))
        at = ", ".join(f"{k}={v}" for k, v in (s["flops_at"] or {}).items())
        why = ""
        if s["flops"] is None and s.get("flops_uncounted"):
            why = (f" ({s['flops_uncounted']} operators without shapes"
                   + (f" at {', '.join(f'{k}={v}' for k, v in s['sizes'].items())}" if s.get("sizes") else "")
                   + ": shape inference left them unknown or made-up dims)")
        print(f"  params {_fmt_count(s['params'])}, FLOPs {_fmt_count(s['flops'])}" + (f" (at {at})" if at else "")
              + why)
        print(f"  inputs:  {_sig(s['inputs'])}")
        print(f"  outputs: {_sig(s['outputs'])}")
        top = list(s["op_types"].items())
        if s.get("llm_config"):
            cfg = s["llm_config"]
            print(f"  export: {cfg['bits']}-bit" + (f", block {cfg['block']}" if cfg.get("block") else "")
                  + f", {cfg['size_bytes'] / 1e3:.1f} kB; runtime {cfg['runtime']}")
            print(f"  fused attention: {', '.join(s['fused_attention'])}")
        print("  op types: " + ", ".join(f"{k} {v}" for k, v in top[:12]) + (f", ... ({len(top)} types)" if len(top) > 12 else ""))
    note = shapes_note(graph.meta)
    if note:
        eprint(f"note: {note}")
    for w in graph.warnings:
        eprint(f"warning: {w}")
    return 0

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Which ONNX operators PyTorch 1.13 exports for real networks, and whether the importer claims them.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14, python3-onnx):

  check-model-operators.py --claimed FILE [--opsets 13 14 17] [--models M ...] [--json OUT]

FILE lists the claimed operators, one per line (`qaic-exec -operators-supported=FILE` writes them from the
importer's own table). For every classification model of torchvision 0.14 at full size (input
[1, 3, 224, 224]; 299 for Inception v3) and for the transformers built from torch.nn that
scripts/gen-models.py defines, and for each opset, the model is exported once (without its
weights: the operators do not depend on them) and the op types of its graph are listed. Prints a
line per model and opset, then every operator some model needs that the importer does not
claim; exits 1 when there is one, 0 otherwise. A model PyTorch itself cannot export at an opset
is reported as such (e.g. Swin V2's aten::zero, a triu in forward before opset 14) and is not a
failure of the importer. `make model-operators` runs it.
"""
import argparse
import collections
import importlib.util
import io
import json
import os
import sys
import time
import warnings

import onnx
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))


def suite_module():
    spec = importlib.util.spec_from_file_location("gen_models", os.path.join(HERE, "gen-models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transformer_models(suite):
    """The torch.nn transformers of the model suite (small widths: the operators are the same)."""
    names = ("bert", "bert_relu_opset17", "gpt", "decoder_relu", "decoder_gelu", "attention_masks")
    out = {}
    for name in names:
        builder, make_inputs, _, description = suite.SUITE[name]
        out["nn/" + name.replace("_opset17", "")] = (builder, make_inputs, description)
    return out


def classification_models():
    out = {}
    for name in torchvision.models.list_models(module=torchvision.models):
        size = 299 if name == "inception_v3" else 224
        builder = getattr(torchvision.models, name)
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kwargs.update(aux_logits=False, init_weights=False)
        out[name] = (lambda b=builder, k=kwargs: b(**k),
                     lambda s=size: (torch.randn(1, 3, s, s),), f"torchvision {name}")
    return out


def op_types(model, inputs, opset):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, buffer, opset_version=opset, export_params=False, do_constant_folding=True)
    graph = onnx.load_from_string(buffer.getvalue()).graph
    return collections.Counter(node.op_type for node in graph.node)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claimed", required=True, help="file listing the claimed operators, one per line")
    parser.add_argument("--opsets", nargs="*", type=int, default=[13, 14, 17])
    parser.add_argument("--models", nargs="*", default=None, help="only these (torchvision names or nn/<name>)")
    parser.add_argument("--json", help="write the op types of every model and opset here")
    args = parser.parse_args()
    claimed = {line.strip() for line in open(args.claimed) if line.strip()}
    models = classification_models()
    models.update(transformer_models(suite_module()))
    if args.models:
        models = {name: spec for name, spec in models.items() if name in args.models}
    torch.set_num_threads(os.cpu_count() or 1)
    report, missing, unexportable = {}, collections.defaultdict(set), []
    for name, (builder, make_inputs, _) in models.items():
        torch.manual_seed(0)
        model = builder().eval()
        inputs = make_inputs()
        for opset in args.opsets:
            start = time.time()
            try:
                ops = op_types(model, inputs, opset)
            except Exception as error:  # the exporter's own limits, reported, not the importer's
                message = str(error).splitlines()[0][:160]
                unexportable.append((name, opset, message))
                print(f"{name:<26} opset {opset}: PyTorch cannot export it: {message}", flush=True)
                continue
            unclaimed = sorted(set(ops) - claimed)
            for op in unclaimed:
                missing[op].add(f"{name}@{opset}")
            report[f"{name}@{opset}"] = dict(sorted(ops.items()))
            verdict = "all claimed" if not unclaimed else "UNCLAIMED: " + ", ".join(unclaimed)
            print(f"{name:<26} opset {opset}: {len(ops):>2} op types, {verdict} ({time.time() - start:.1f} s)", flush=True)
        del model
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"models": report, "unexportable": unexportable}, out, indent=1)
    used = sorted({op for ops in report.values() for op in ops})
    print(f"\n{len(report)} exports, {len(used)} distinct op types: {', '.join(used)}")
    if unexportable:
        print(f"{len(unexportable)} exports PyTorch itself refuses (listed above)")
    if missing:
        for op, where in sorted(missing.items()):
            print(f"UNCLAIMED {op}: {', '.join(sorted(where))}")
        return 1
    print("every operator of every exported model is claimed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

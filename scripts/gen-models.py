#!/usr/bin/python3
"""Exports torchvision models to ONNX with PyTorch's output for a fixed input.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision, python3-onnx).

  gen-models.py OUT                 writes, per model, OUT/<name>.onnx (opset 13),
                                    OUT/<name>.input.bin (float32 [1,3,224,224]) and
                                    OUT/<name>.output.bin (float32 [1,1000]), then OUT/index.txt;
                                    and the 1-D convolution network conv1d (input [2,20,64],
                                    output [2,12,30]: seed 003's 1-D data with channels), then
                                    OUT/conv1d.txt. Models whose three files exist are kept (cache).
  gen-models.py OUT --torch-latency --threads T --iterations N
                                    prints {"<name>": seconds per batch-1 inference, ...} as JSON,
                                    PyTorch's own latency for the ratio in scripts/bench-models.sh.

Weights are random (torch.manual_seed fixed) and batchnorm running statistics are randomized
too, so that batchnorm folding in the importer is exercised with non-trivial values.
"""
import argparse
import json
import os
import sys
import time

import torch
import torchvision

MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1")
SEED = 20240611


def build_conv1d():
    """A torch.nn.Conv1d network as a user exports it: [N, C, L] in and out, 20 input channels
    (three of seed 003's chunks of 8), a folded BatchNorm1d, a grouped and a strided conv."""
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(
        torch.nn.Conv1d(20, 24, 3, padding=1), torch.nn.BatchNorm1d(24), torch.nn.ReLU(),
        torch.nn.Conv1d(24, 24, 3, padding=1, groups=4), torch.nn.ReLU(),
        torch.nn.Conv1d(24, 12, 5, stride=2))
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 1.5)
    return model.eval()


def build(name):
    if name == "conv1d":
        return build_conv1d()
    torch.manual_seed(SEED)
    model = getattr(torchvision.models, name)(weights=None)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model.eval()


def example_input(name=None):
    generator = torch.Generator().manual_seed(SEED + 1)
    if name == "conv1d":
        return torch.randn(2, 20, 64, generator=generator)
    return torch.randn(1, 3, 224, 224, generator=generator)


def export(name, out_dir):
    paths = [os.path.join(out_dir, name + suffix) for suffix in (".onnx", ".input.bin", ".output.bin")]
    if all(os.path.exists(p) for p in paths):
        return
    model = build(name)
    x = example_input(name)
    with torch.no_grad():
        y = model(x)
    tmp = [p + ".tmp" for p in paths]
    torch.onnx.export(model, x, tmp[0], opset_version=13, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    x.numpy().astype("float32").tofile(tmp[1])
    y.numpy().astype("float32").tofile(tmp[2])
    for t, p in zip(tmp, paths):
        os.replace(t, p)


def torch_latency(threads, iterations):
    torch.set_num_threads(threads)
    results = {}
    x = example_input()
    for name in MODELS:
        model = build(name)
        with torch.no_grad():
            for _ in range(3):
                model(x)
            start = time.perf_counter()
            for _ in range(iterations):
                model(x)
            results[name] = (time.perf_counter() - start) / iterations
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--torch-latency", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    if args.torch_latency:
        print(json.dumps(torch_latency(args.threads, args.iterations)))
        return 0
    os.makedirs(args.output, exist_ok=True)
    for name in MODELS:
        export(name, args.output)
    export("conv1d", args.output)
    for stamp, names in (("index.txt", MODELS), ("conv1d.txt", ("conv1d",))):
        index = os.path.join(args.output, stamp)
        with open(index + ".tmp", "w") as out:
            out.write("\n".join(names) + "\n")
        os.replace(index + ".tmp", index)
    return 0


if __name__ == "__main__":
    sys.exit(main())

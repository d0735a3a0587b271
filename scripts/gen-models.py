#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch models exported to ONNX, with PyTorch's own outputs for fixed inputs.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14, python3-onnx).

  gen-models.py OUT --index NAME --models M [M ...]
      writes, per model, OUT/<name>.onnx, its inputs OUT/<name>.in<k>.bin and PyTorch's outputs
      OUT/<name>.out<k>.bin (raw, row-major), and OUT/<name>.json describing them (name, dtype,
      dims of each input and output, opset, and the digest of this script); a model whose
      description names this script's digest is kept (cache), so an edit regenerates.
      OUT/NAME, the list of models, is written last.
  gen-models.py OUT --list
      prints every model name this script knows, with its description.
  gen-models.py OUT --torch-latency --models M [M ...] --threads T --iterations N
      prints {"<name>": seconds per inference, ...}: PyTorch's latency on the same inputs,
      for the ratios of scripts/bench-models.sh.

The suite covers every family of torchvision 0.14's classification models with the
torchvision class itself at a reduced configuration and small inputs (same operators, a
fraction of the weights), plus transformers built from torch.nn: a BERT-like encoder (int64
token ids and an attention mask), a GPT-like decoder (hand-written causal attention), the
nn.TransformerDecoder with relu and gelu, and nn.MultiheadAttention with masks. Weights are
random (torch.manual_seed fixed) and batchnorm running statistics are randomized too, so that
batchnorm folding in the importer is exercised with non-trivial values. The *_full models are
the full-size networks of `make bench`.
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time
import warnings

import torch
import torchvision
from torch import nn
from torchvision import models as tvm

SEED = 20240611
DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.bool: "bool"}


def randomize_batchnorm(model):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model


def images(size, batch=1, channels=3):
    def make():
        generator = torch.Generator().manual_seed(SEED + 1)
        return (torch.randn(batch, channels, size, size, generator=generator),)
    return make


# ---- the reduced torchvision classes ------------------------------------------------------------

def small_classifier(model, features, hidden=64, classes=10):
    """AlexNet's and VGG's classifiers are 4096 wide whatever the input: narrower, same ops."""
    model.classifier = nn.Sequential(nn.Dropout(), nn.Linear(features, hidden), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(hidden, hidden), nn.ReLU(True), nn.Linear(hidden, classes))
    return model


def alexnet():
    return small_classifier(tvm.alexnet(num_classes=10), 256 * 6 * 6)


def vgg_bn():
    from torchvision.models.vgg import VGG, make_layers
    layers = make_layers([16, "M", 32, "M", 32, 32, "M", 64, 64, "M", 64, 64, "M"], batch_norm=True)
    return small_classifier(VGG(layers, num_classes=10), 64 * 7 * 7)


def resnet():
    from torchvision.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)


def resnext():
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], groups=4, width_per_group=8, num_classes=10)


def wide_resnet():
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128, num_classes=10)  # wide_resnet50_2's width


def densenet():
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=8, block_config=(2, 3), num_init_features=16, bn_size=2, num_classes=10)


def efficientnet_v2():
    from functools import partial
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
    setting = [FusedMBConvConfig(1, 3, 1, 16, 16, 1), FusedMBConvConfig(4, 3, 2, 16, 24, 1),
               MBConvConfig(4, 3, 2, 24, 32, 1, 1.0, 1.0), MBConvConfig(6, 3, 1, 32, 48, 2, 1.0, 1.0)]
    return EfficientNet(setting, dropout=0.2, last_channel=128, num_classes=10,
                        norm_layer=partial(nn.BatchNorm2d, eps=1e-3))


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 2)], stochastic_depth_prob=0.0, num_classes=10)


def vit():
    model = tvm.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                                  num_classes=10)
    # torchvision starts the classification head at zero, so every output would be 0 whatever the
    # layers before it compute, and a comparison of outputs would test nothing of them.
    torch.nn.init.normal_(model.heads.head.weight, std=0.2)
    torch.nn.init.normal_(model.heads.head.bias, std=0.05)
    return model


def swin():
    return tvm.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[2, 2],
                               stochastic_depth_prob=0.0, num_classes=10)


def maxvit():
    return tvm.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16],
                      block_layers=[1, 1], head_dim=4, stochastic_depth_prob=0.0, num_classes=10)


# ---- transformers from torch.nn -----------------------------------------------------------------

class BertLike(nn.Module):
    """Token, position and segment embeddings, LayerNorm, nn.TransformerEncoder, a pooler."""

    def __init__(self, vocab=100, hidden=32, heads=4, layers=2, seq=16, activation="gelu"):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq, hidden)
        self.segments = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.1, activation=activation,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions) + self.segments(torch.zeros_like(input_ids)))
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return x, torch.tanh(self.pooler(x[:, 0]))


class GptLike(nn.Module):
    """A decoder-only transformer with hand-written causal attention and tanh GELU."""

    def __init__(self, vocab=100, hidden=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.heads = heads
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "ln1": nn.LayerNorm(hidden), "qkv": nn.Linear(hidden, 3 * hidden), "proj": nn.Linear(hidden, hidden),
            "ln2": nn.LayerNorm(hidden), "fc": nn.Linear(hidden, 4 * hidden), "out": nn.Linear(4 * hidden, hidden),
        }) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        batch, length = input_ids.shape
        x = self.tokens(input_ids) + self.positions(torch.arange(length).unsqueeze(0))
        causal = torch.tril(torch.ones(length, length, dtype=torch.bool))
        for block in self.blocks:
            q, k, v = block["qkv"](block["ln1"](x)).split(x.shape[-1], dim=-1)
            q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            attention = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            attention = attention.masked_fill(~causal, float("-inf")).softmax(-1)
            x = x + block["proj"]((attention @ v).transpose(1, 2).reshape(batch, length, -1))
            x = x + block["out"](nn.functional.gelu(block["fc"](block["ln2"](x)), approximate="tanh"))
        return self.head(self.norm(x))


class Decoder(nn.Module):
    """nn.TransformerDecoder over a memory, with a causal target mask."""

    def __init__(self, activation, hidden=32, heads=4, layers=2, length=8):
        super().__init__()
        layer = nn.TransformerDecoderLayer(hidden, heads, 2 * hidden, activation=activation, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        # A buffer, not built in forward: the exporter has no triu before opset 14.
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length))

    def forward(self, target, memory):
        return self.decoder(target, memory, tgt_mask=self.mask)


class Attention(nn.Module):
    """nn.MultiheadAttention with a key padding mask and a boolean attention mask."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.attention = nn.MultiheadAttention(hidden, heads, batch_first=True)

    def forward(self, query, keys, padding, blocked):
        return self.attention(query, keys, keys, key_padding_mask=padding, attn_mask=blocked)[0]


def tokens(batch=2, length=16, vocab=100, mask=True):
    def make():
        generator = torch.Generator().manual_seed(SEED + 2)
        ids = torch.randint(0, vocab, (batch, length), generator=generator)
        if not mask:
            return (ids,)
        attention = torch.ones(batch, length, dtype=torch.int64)
        attention[-1, length * 3 // 4:] = 0  # the last sequence is padded
        return ids, attention
    return make


def decoder_inputs():
    generator = torch.Generator().manual_seed(SEED + 3)
    return torch.randn(2, 8, 32, generator=generator), torch.randn(2, 10, 32, generator=generator)


def attention_inputs():
    generator = torch.Generator().manual_seed(SEED + 4)
    padding = torch.zeros(2, 10, dtype=torch.bool)
    padding[1, 7:] = True
    blocked = torch.rand(8, 10, generator=generator) > 0.8
    blocked[:, 0] = False  # every query keeps one key
    return (torch.randn(2, 8, 32, generator=generator), torch.randn(2, 10, 32, generator=generator), padding, blocked)


def bert_base(layers=4):
    """BERT-base-shaped: hidden 768, 12 heads, sequence 128 (make bench)."""
    return BertLike(vocab=30522, hidden=768, heads=12, layers=layers, seq=128)


def conv1d():
    """torch.nn.Conv1d as a user exports it: [N, C, L] in and out, 20 input channels (three of seed
    003's chunks of 8), a BatchNorm1d to fold, a grouped and a strided convolution."""
    return nn.Sequential(nn.Conv1d(20, 24, 3, padding=1), nn.BatchNorm1d(24), nn.ReLU(),
                         nn.Conv1d(24, 24, 3, padding=1, groups=4), nn.ReLU(),
                         nn.Conv1d(24, 12, 5, stride=2))


class PositionsTopK(nn.Module):
    """OPT-style positions counted from the attention mask (CumSum over int64), a transformer
    layer, and the five best tokens of each position (TopK: values and int64 indices)."""

    def __init__(self, vocab=100, hidden=32, heads=4, seq=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq + 1, hidden)
        self.layer = nn.TransformerEncoderLayer(hidden, heads, 2 * hidden, dropout=0.1, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids, attention_mask):
        positions = torch.cumsum(attention_mask, dim=1) * attention_mask  # 0 on padding
        x = self.tokens(input_ids) + self.positions(positions)
        x = self.layer(x, src_key_padding_mask=attention_mask == 0)
        values, indices = torch.topk(self.head(x), 5, dim=-1)
        return values, indices


class Recurrent(nn.Module):
    """A 2-layer bidirectional nn.LSTM (batch_first), an nn.GRU over its outputs and an nn.RNN
    (relu), as sequence models are exported: ONNX LSTM, GRU and RNN with PyTorch's gate order
    rewritten, Transpose and Squeeze around them; the GRU starts from a given state."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(20, 24, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(48, 16, batch_first=True)
        self.rnn = nn.RNN(16, 12, nonlinearity="relu", batch_first=True)
        self.head = nn.Linear(12, 5)

    def forward(self, x, h0):
        y, _ = self.lstm(x)
        y, _ = self.gru(y, h0)
        y, h = self.rnn(y)
        return self.head(y[:, -1]), h


def recurrent_inputs():
    generator = torch.Generator().manual_seed(SEED + 7)
    return torch.randn(2, 12, 20, generator=generator), torch.randn(1, 2, 16, generator=generator)


class MaskingOneHot(nn.Module):
    """Non-finite readings masked out (torch.isnan, torch.isinf) and class ids one-hot encoded
    (F.one_hot, exported as OneHot) into a linear layer."""

    def __init__(self):
        super().__init__()
        self.classes = nn.Linear(10, 8)

    def forward(self, readings, ids):
        clean = torch.where(torch.isnan(readings) | torch.isinf(readings), torch.zeros_like(readings), readings)
        return clean.sum(-1), self.classes(nn.functional.one_hot(ids, 10).float())


def masking_inputs():
    generator = torch.Generator().manual_seed(SEED + 8)
    readings = torch.randn(3, 6, generator=generator)
    readings[0, 1], readings[1, 4], readings[2, 0] = float("nan"), float("inf"), float("-inf")
    return readings, torch.randint(0, 10, (3, 4), generator=generator)


def local_response_norm():
    """An AlexNet-style stem with nn.LocalResponseNorm, whose export tests the input's rank with
    an If on static shapes (and pads and averages across channels)."""
    return nn.Sequential(nn.Conv2d(3, 16, 5, stride=2, padding=2), nn.ReLU(), nn.LocalResponseNorm(5, alpha=1e-3),
                         nn.MaxPool2d(3, 2), nn.Conv2d(16, 8, 3), nn.LocalResponseNorm(3), nn.Flatten(),
                         nn.Linear(8 * 5 * 5, 10))


class FunctionBlock(nn.Module):
    """Linear, GELU, LayerNorm and a residual: the module exported as a function."""

    def __init__(self, width=32):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(nn.functional.gelu(self.linear(x))) + x


class ModulesAsFunctions(nn.Module):
    """Two blocks exported with torch.onnx.export(export_modules_as_functions=...): the graph
    calls model-local functions (FunctionBlock, LayerNorm) instead of holding their operators."""

    export_modules_as_functions = {FunctionBlock, nn.LayerNorm}

    def __init__(self):
        super().__init__()
        self.first = FunctionBlock()
        self.second = FunctionBlock()

    def forward(self, x):
        return self.second(self.first(x))


def sequences():
    generator = torch.Generator().manual_seed(SEED + 6)
    return (torch.randn(2, 8, 32, generator=generator),)


class NormsAndPixelShuffle(nn.Module):
    """An image-to-image network as super-resolution and style-transfer users write it: PixelUnshuffle
    (exported as Reshape and Transpose), GroupNorm and InstanceNorm2d (both exported as
    InstanceNormalization), PixelShuffle (DepthToSpace, CRD). Norm weights are random, not 1 and 0."""

    def __init__(self):
        super().__init__()
        self.unshuffle = nn.PixelUnshuffle(2)
        self.conv1 = nn.Conv2d(12, 16, 3, padding=1)
        self.group = nn.GroupNorm(4, 16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.instance = nn.InstanceNorm2d(32, affine=True)
        self.shuffle = nn.PixelShuffle(2)
        self.conv3 = nn.Conv2d(8, 3, 3, padding=1)
        generator = torch.Generator().manual_seed(SEED + 5)
        with torch.no_grad():
            for norm in (self.group, self.instance):
                norm.weight.copy_(torch.rand(norm.weight.shape, generator=generator) + 0.5)
                norm.bias.copy_(torch.randn(norm.bias.shape, generator=generator) * 0.1)

    def forward(self, x):
        x = torch.relu(self.group(self.conv1(self.unshuffle(x))))
        x = torch.relu(self.instance(self.conv2(x)))
        return self.conv3(self.shuffle(x))


def video_r2plus1d():
    """torchvision's R(2+1)D at depth [1,1,1,1]: Conv3d factored into (1,k,k) and (k,1,1) kernels,
    BatchNorm3d folded, AdaptiveAvgPool3d as GlobalAveragePool."""
    from torchvision.models.video import resnet as video
    return video.VideoResNet(video.BasicBlock, [video.Conv2Plus1D] * 4, [1, 1, 1, 1], video.R2Plus1dStem,
                             num_classes=10)


def volumes():
    """Conv3d as volumetric networks use it: grouped, dilated, strided and padded windows, a
    BatchNorm3d to fold, MaxPool3d and AvgPool3d (ceil_mode, count_include_pad), and a 3-D UNet's
    upsampling ConvTranspose3d (grouped, strided, padded, with output_padding)."""
    return nn.Sequential(nn.Conv3d(4, 8, (3, 1, 3), stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1), groups=2),
                         nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
                         nn.AvgPool3d(2, stride=1, padding=1, ceil_mode=True), nn.Conv3d(8, 4, 1, bias=False),
                         nn.ConvTranspose3d(4, 6, (2, 3, 3), stride=(2, 1, 2), padding=(0, 1, 1),
                                            output_padding=(1, 0, 1), groups=2))


class SpatialTransformer(nn.Module):
    """A spatial transformer network and an optical-flow style warp, both on F.grid_sample
    (GridSample): the affine grid built by hand (affine_grid does not export before opset 20),
    the flow added to a base grid and sampled with border padding and bicubic weights."""

    def __init__(self, size=16):
        super().__init__()
        self.localization = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))
        self.flow = nn.Conv2d(3, 2, 3, padding=1)
        self.head = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * size * size, 10))
        line = (torch.arange(size, dtype=torch.float32) * 2 + 1) / size - 1  # pixel centres, align_corners=False
        ys, xs = torch.meshgrid(line, line, indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys, torch.ones_like(xs)], -1))  # [H, W, 3]
        self.size = size

    def forward(self, x):
        theta = self.localization(x).view(-1, 1, 1, 2, 3) * 0.5 + torch.tensor([[1.0, 0, 0], [0, 1, 0]])
        grid = (theta @ self.base.unsqueeze(-1)).squeeze(-1)  # [N, H, W, 2]
        aligned = nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        flow = torch.tanh(self.flow(x)).permute(0, 2, 3, 1) * 0.3
        warped = nn.functional.grid_sample(x, self.base[..., :2] + flow, mode="bicubic", padding_mode="border",
                                           align_corners=False)
        return self.head(torch.cat([aligned, warped], 1))


class RoiHeads(nn.Module):
    """A two-stage detector's second stage as it is exported on its own: a small backbone, then
    torchvision.ops.roi_align over given regions (an input [R, 5]: image index and corners, in
    input pixels) and a box head. aligned=False, the form torchvision 0.14 writes faithfully below
    opset 16 (docs/conformance.md)."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 5 * 5, 32), nn.ReLU(), nn.Linear(32, 6))

    def forward(self, images, regions):
        features = self.backbone(images)
        pooled = torchvision.ops.roi_align(features, regions, (5, 5), spatial_scale=0.5, sampling_ratio=2,
                                           aligned=False)
        return self.head(pooled)


def regions_of_interest():
    generator = torch.Generator().manual_seed(SEED + 1)
    images = torch.randn(2, 3, 32, 32, generator=generator)
    corners = torch.rand(5, 2, generator=generator) * 20
    sizes = torch.rand(5, 2, generator=generator) * 14 + 2
    index = torch.tensor([[0.0], [1.0], [1.0], [0.0], [1.0]])
    return images, torch.cat([index, corners, corners + sizes], 1)


class FakeQuantized(nn.Module):
    """A network as quantization-aware training exports it: QuantizeLinear -> DequantizeLinear
    pairs. The input is fake-quantized to uint8 (per tensor, zero point 128), the weights to int8
    per output channel (Conv) and per tensor (Linear); the weights' pairs fold at import. Only
    the input is quantized at run time: a rounding that an activation's last bit decides would
    make the comparison with PyTorch depend on the order of its sums."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, groups=2)
        self.classes = nn.Linear(32, 10)

    @staticmethod
    def per_channel(weight):
        scale = weight.detach().abs().amax(dim=tuple(range(1, weight.dim()))) / 127
        zero = torch.zeros(weight.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, -128, 127)

    @staticmethod
    def per_tensor(weight):
        return torch.fake_quantize_per_tensor_affine(weight, float(weight.detach().abs().max()) / 127, 0, -128, 127)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.025, 128, 0, 255)
        x = torch.relu(nn.functional.conv2d(x, self.per_channel(self.conv1.weight), self.conv1.bias, padding=1))
        x = torch.relu(nn.functional.conv2d(x, self.per_channel(self.conv2.weight), self.conv2.bias, stride=2,
                                            groups=2))
        return nn.functional.linear(x.mean((2, 3)), self.per_tensor(self.classes.weight), self.classes.bias)


def clips(batch=1, channels=3, frames=4, size=32):
    def make():
        generator = torch.Generator().manual_seed(SEED + 1)
        return (torch.randn(batch, channels, frames, size, size, generator=generator),)
    return make


def waveforms():
    generator = torch.Generator().manual_seed(SEED + 1)
    return (torch.randn(2, 20, 64, generator=generator),)


# name -> (builder, inputs, opset, description)
SUITE = {
    "alexnet": (alexnet, images(224), 14, "AlexNet, narrow classifier"),
    "vgg_bn": (vgg_bn, images(224), 14, "VGG with batchnorm, narrow layers"),
    "resnet": (resnet, images(64), 13, "ResNet, basic blocks [1,1,1,1]"),
    "resnext": (resnext, images(64), 14, "ResNeXt, grouped bottlenecks [1,1,1,1]"),
    "wide_resnet": (wide_resnet, images(64), 17, "Wide ResNet, bottlenecks twice as wide, opset 17"),
    "densenet": (densenet, images(64), 14, "DenseNet, growth 8, blocks (2, 3)"),
    "googlenet": (lambda: tvm.GoogLeNet(num_classes=10, aux_logits=False, init_weights=True), images(64), 14,
                  "GoogLeNet (ceil_mode pooling)"),
    "inception_v3": (lambda: tvm.Inception3(num_classes=10, aux_logits=False, init_weights=True), images(80), 14,
                     "Inception v3 (count_include_pad pooling)"),
    "squeezenet": (lambda: tvm.SqueezeNet("1_1", num_classes=10), images(64), 13, "SqueezeNet 1.1"),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(width_mult=0.5, num_classes=10), images(64), 14, "MobileNetV2 x0.5"),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(width_mult=0.5, num_classes=10), images(64), 14,
                           "MobileNetV3-Large x0.5 (HardSwish, HardSigmoid)"),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(num_classes=10), images(64), 13,
                           "MobileNetV3-Small at opset 13 (HardSigmoid, Mul)"),
    "mnasnet": (lambda: tvm.mnasnet0_5(num_classes=10), images(64), 14, "MNASNet 0.5 (ReduceMean)"),
    "shufflenet_v2": (lambda: tvm.shufflenet_v2_x0_5(num_classes=10), images(64), 14, "ShuffleNetV2 x0.5 (Split, Slice)"),
    "efficientnet": (lambda: tvm.efficientnet_b0(num_classes=10), images(64), 14, "EfficientNet-B0"),
    "efficientnet_v2": (efficientnet_v2, images(64), 14, "EfficientNetV2 (fused and plain MBConv)"),
    "regnet_x": (lambda: tvm.regnet_x_400mf(num_classes=10), images(64), 14, "RegNetX-400MF"),
    "regnet_y": (lambda: tvm.regnet_y_400mf(num_classes=10), images(64), 14, "RegNetY-400MF (squeeze-excite)"),
    "convnext": (convnext, images(32), 14, "ConvNeXt, 2 stages (LayerNorm decomposed, GELU)"),
    "convnext_opset17": (convnext, images(32), 17, "ConvNeXt at opset 17 (LayerNormalization)"),
    "vit": (vit, images(32), 14, "VisionTransformer 32/8, 2 layers"),
    "vit_opset17": (vit, images(32), 17, "VisionTransformer at opset 17"),
    "swin": (swin, images(32), 14, "SwinTransformer, depths [2,2], shifted windows"),
    "maxvit": (maxvit, images(32), 14, "MaxVit, 2 stages (Einsum, relative positions)"),
    "bert": (lambda: BertLike(), tokens(), 14, "BERT-like encoder: int64 ids and mask, nn.TransformerEncoder"),
    "bert_relu_opset17": (lambda: BertLike(activation="relu"), tokens(), 17, "BERT-like encoder, relu, opset 17"),
    "gpt": (lambda: GptLike(), tokens(mask=False), 14, "GPT-like decoder, causal attention, tanh GELU"),
    "gpt_opset17": (lambda: GptLike(), tokens(mask=False), 17, "GPT-like decoder at opset 17"),
    "decoder_relu": (lambda: Decoder("relu"), decoder_inputs, 13, "nn.TransformerDecoder, relu, opset 13"),
    "decoder_gelu": (lambda: Decoder("gelu"), decoder_inputs, 17, "nn.TransformerDecoder, gelu, opset 17"),
    "attention_masks": (lambda: Attention(), attention_inputs, 14, "nn.MultiheadAttention with both masks"),
    "positions_topk": (lambda: PositionsTopK(), tokens(), 14,
                       "OPT-style positions from the mask (CumSum), the 5 best tokens (TopK)"),
    "recurrent": (Recurrent, recurrent_inputs, 14, "nn.LSTM (2 layers, bidirectional), nn.GRU, nn.RNN (relu)"),
    "masking_one_hot": (MaskingOneHot, masking_inputs, 14, "torch.isnan, torch.isinf, F.one_hot (IsNaN, IsInf, OneHot)"),
    "local_response_norm": (local_response_norm, images(32), 14,
                            "nn.LocalResponseNorm (an If on static shapes, Pad, AveragePool across channels)"),
    "modules_as_functions": (ModulesAsFunctions, sequences, 15,
                             "modules exported as ONNX model-local functions (export_modules_as_functions)"),
    "norms_pixel_shuffle": (NormsAndPixelShuffle, images(32), 14,
                            "GroupNorm, InstanceNorm2d (InstanceNormalization), PixelShuffle (DepthToSpace)"),
    "conv1d": (conv1d, waveforms, 14, "nn.Conv1d network, [2, 20, 64] in, [2, 12, 30] out (grouped, strided)"),
    "video_r2plus1d": (video_r2plus1d, clips(), 14, "R(2+1)D video network, depth [1,1,1,1] (Conv3d)"),
    "volumes": (volumes, clips(batch=2, channels=4, frames=6, size=10), 14,
                "Conv3d (grouped, dilated, padded), BatchNorm3d, MaxPool3d, AvgPool3d, ConvTranspose3d"),
    "fake_quantized": (FakeQuantized, images(24, batch=2), 13,
                       "quantization-aware export: QuantizeLinear / DequantizeLinear (uint8 input, int8 weights)"),
    "spatial_transformer": (SpatialTransformer, images(16, batch=2), 16,
                            "spatial transformer and flow warp: F.grid_sample, bilinear and bicubic (GridSample)"),
    "roi_heads": (RoiHeads, regions_of_interest, 11,
                  "a detector's second stage: torchvision.ops.roi_align over given regions (RoiAlign)"),
    # make bench: full-size networks.
    "resnet50_full": (lambda: tvm.resnet50(), images(224), 14, "ResNet-50"),
    "mobilenet_v3_large_full": (lambda: tvm.mobilenet_v3_large(), images(224), 14, "MobileNetV3-Large"),
    "convnext_tiny_full": (lambda: tvm.convnext_tiny(), images(224), 14, "ConvNeXt-Tiny"),
    "bert_base_full": (bert_base, tokens(batch=1, length=128, vocab=30522), 14,
                       "BERT-base-shaped encoder: hidden 768, 12 heads, sequence 128, 4 layers"),
    "resnet18_full": (lambda: tvm.resnet18(), images(224), 13, "ResNet-18"),
    "mobilenet_v2_full": (lambda: tvm.mobilenet_v2(), images(224), 13, "MobileNetV2"),
    "densenet121_full": (lambda: tvm.densenet121(), images(224), 14, "DenseNet-121"),
    "efficientnet_b0_full": (lambda: tvm.efficientnet_b0(), images(224), 14, "EfficientNet-B0"),
}


def build(name):
    torch.manual_seed(SEED)
    builder, make_inputs, opset, _ = SUITE[name]
    return randomize_batchnorm(builder()).eval(), make_inputs(), opset


def outputs_of(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def write_raw(path, tensor):
    tensor.detach().contiguous().numpy().tofile(path)


def script_digest():
    with open(os.path.abspath(__file__), "rb") as source:
        return hashlib.sha256(source.read()).hexdigest()


def export(name, out_dir):
    meta_path = os.path.join(out_dir, name + ".json")
    if os.path.exists(meta_path):
        with open(meta_path) as cached:
            if json.load(cached).get("script") == script_digest():
                return
    model, inputs, opset = build(name)
    # With gradients on: in inference mode nn.TransformerEncoder takes its nested-tensor fast
    # path, which zeroes padded positions instead of computing what the exported graph computes.
    outputs = [t.detach() for t in outputs_of(model(*inputs))]
    input_names = [f"input{k}" if len(inputs) > 1 else "input" for k in range(len(inputs))]
    if name.startswith("bert"):
        input_names = ["input_ids", "attention_mask"]
    output_names = [f"output{k}" if len(outputs) > 1 else "output" for k in range(len(outputs))]
    onnx_path = os.path.join(out_dir, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # A model may ask for some of its modules as ONNX model-local functions.
        as_functions = getattr(model, "export_modules_as_functions", False)
        torch.onnx.export(model, inputs, onnx_path + ".tmp", opset_version=opset, input_names=input_names,
                          output_names=output_names, do_constant_folding=True,
                          export_modules_as_functions=as_functions)
    # The names as exported: with export_modules_as_functions PyTorch 1.13 ignores output_names.
    import onnx
    exported = onnx.load(onnx_path + ".tmp")
    initializers = {t.name for t in exported.graph.initializer}
    input_names = [v.name for v in exported.graph.input if v.name not in initializers]
    output_names = [v.name for v in exported.graph.output]
    os.replace(onnx_path + ".tmp", onnx_path)
    meta = {"opset": opset, "description": SUITE[name][3], "script": script_digest(), "inputs": [], "outputs": []}
    for kind, names, tensors in (("in", input_names, inputs), ("out", output_names, outputs)):
        for k, (tensor_name, tensor) in enumerate(zip(names, tensors)):
            path = os.path.join(out_dir, f"{name}.{kind}{k}.bin")
            write_raw(path, tensor)
            meta["inputs" if kind == "in" else "outputs"].append(
                {"name": tensor_name, "dtype": DTYPES[tensor.dtype], "dims": list(tensor.shape),
                 "file": os.path.basename(path)})
    with open(meta_path + ".tmp", "w") as out:
        json.dump(meta, out, indent=1)
    os.replace(meta_path + ".tmp", meta_path)


def torch_latency(names, threads, iterations):
    torch.set_num_threads(threads)
    results = {}
    for name in names:
        model, inputs, _ = build(name)
        with torch.no_grad():
            for _ in range(3):
                model(*inputs)
            start = time.perf_counter()
            for _ in range(iterations):
                model(*inputs)
            results[name] = (time.perf_counter() - start) / iterations
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--index", default="index.txt")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--torch-latency", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    if args.list:
        for name, spec in SUITE.items():
            print(f"{name:<26}{spec[3]}")
        return 0
    unknown = [m for m in args.models if m not in SUITE]
    if unknown:
        parser.error("unknown models: " + ", ".join(unknown))
    if args.torch_latency:
        print(json.dumps(torch_latency(args.models, args.threads, args.iterations)))
        return 0
    os.makedirs(args.output, exist_ok=True)
    for name in args.models:
        export(name, args.output)
    index = os.path.join(args.output, args.index)
    with open(index + ".tmp", "w") as out:
        out.write("\n".join(args.models) + "\n")
    os.replace(index + ".tmp", index)
    return 0


if __name__ == "__main__":
    sys.exit(main())

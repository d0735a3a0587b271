// SPDX-License-Identifier: Apache-2.0
// qaic-exec's passes, one file each in this folder (named after the pass), in the order
// Compiler.cpp runs them. A pass throws CompileError (or the IR library's and importer's
// errors) naming the file and what is wrong; the messages are qaic-exec's.
#pragma once

#include <span>

#include "Compilation.hpp"

namespace qaic::compiler {

// Model passes: one specialization's network, from loading to its checked io.
void loadModelPass(const Compilation& compilation, Variant& variant);
void networkChecksPass(const Compilation& compilation, Variant& variant);
void batchSizePass(const Compilation& compilation, Variant& variant);
void inferShapesPass(const Compilation& compilation, Variant& variant);
void customIoPass(const Compilation& compilation, Variant& variant);
void fp16IoFormatsPass(const Compilation& compilation, Variant& variant);
void exchangeableIoPass(const Compilation& compilation, Variant& variant);
void specializationIoPass(const Compilation& compilation, Variant& variant);

// Compile passes: the whole compilation.
void partitionConfigPass(Compilation& compilation);
void specializationConfigPass(Compilation& compilation);
void customIoListPass(Compilation& compilation);
// Runs `passes` for every specialization in turn (a failure names the entry).
void loadSpecializationsPass(Compilation& compilation, std::span<const ModelPass> passes);
void defaultSpecializationPass(Compilation& compilation);
void retainedStatePass(Compilation& compilation);
void castPlacementPass(Compilation& compilation);
void tensorSlicingPass(Compilation& compilation);
void pipelineStagesPass(Compilation& compilation);
void packConstantsPass(Compilation& compilation);
void ioLayoutPass(Compilation& compilation);
void specializationPayloadsPass(Compilation& compilation);
void constantTablePass(Compilation& compilation);
void programPass(Compilation& compilation);
void devicePartsPass(Compilation& compilation);
void writeContainerPass(Compilation& compilation);
// -aic-binary-dir, created when missing (write-container, and device-parts for the parts'
// files); CompileError naming it when it cannot be.
void createOutputDirectory(const std::string& binaryDir);
void dumpPartitionConfigPass(Compilation& compilation);

}  // namespace qaic::compiler

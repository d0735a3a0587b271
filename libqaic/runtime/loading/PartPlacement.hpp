// SPDX-License-Identifier: Apache-2.0
// A multi-device program's parts (container version 4, docs/formats/qpc.md 11c) on the cards
// they run on: which device each part takes (choosePartDevices) and each part's own
// single-device container (partPrograms), which the part's InferenceSetImpl loads as any
// program. Everything here is decided before a part is reserved or activated, so a refusal costs
// nothing on any card.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <qaic/InferenceSet.hpp>
#include <qaic/Qpc.hpp>

namespace qaic::container {
class QpcImage;
}

namespace qaic::rt {

class ContextImpl;

// The devices of the parts, from the first source that applies
// (docs/runtime.md, "Multi-device programs"): `program.devMapping`, else the context's devices
// when the application named them (Context::Factory's list; too few is an error; the k-th
// named device runs the part of the k-th lowest slot, i.e. the config's k-th device), else the
// first devices of the context in one peer-to-peer group that have free what their part's
// `numActivations` activations need. Throws Error naming `what`, the devices and the part count:
// QS_INVAL for too few devices named, a device named twice or devices that are not linked peer
// to peer (where the devices publish their topology), a device outside the context; QS_NODEV
// when the context has fewer devices than parts; QS_NO_RESOURCES when no group of the context's
// devices has enough free ones.
std::vector<QID> choosePartDevices(const ContextImpl& context, const container::QpcImage& image,
                                   uint32_t numActivations, const ProgramProperties& program, const std::string& what);

// Part p's single-device container: part 0 is the outer container without its device_parts
// section (rewritten, since a card loads single-device containers only), the others their
// nested images. Throws QpcError as Qpc::Factory does.
std::vector<std::shared_ptr<Qpc>> partPrograms(const container::QpcImage& image);

// "0, 1 and 3"
std::string deviceListText(const std::vector<QID>& devices);

}  // namespace qaic::rt

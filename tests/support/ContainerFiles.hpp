// SPDX-License-Identifier: Apache-2.0
// Test helper: program containers as the tests read and write them: a container a test compiled
// opened and inspected (QpcImage: programs, io buffers, payloads) and one written from contents
// (QpcWriter), through the container library so the test sees what every reader sees, and what
// a container's activations need of a device (ResourceNeeds).
#pragma once

#include "container/QpcImage.hpp"
#include "container/QpcWriter.hpp"
#include "container/ResourceNeeds.hpp"

// SPDX-License-Identifier: Apache-2.0
// Everything an application of libqaic includes: the program container, the runtime objects, the
// IO-set validation and the float16 conversions.
#pragma once

#include <qaic/Context.hpp>
#include <qaic/Errors.hpp>
#include <qaic/Float16.hpp>
#include <qaic/InferenceHandle.hpp>
#include <qaic/InferenceSet.hpp>
#include <qaic/InferenceSetGroup.hpp>
#include <qaic/IoValidation.hpp>
#include <qaic/Partition.hpp>
#include <qaic/ProfilingHandle.hpp>
#include <qaic/QBuffer.hpp>
#include <qaic/Qpc.hpp>
#include <qaic/Resources.hpp>
#include <qaic/Types.hpp>
#include <qaic/Util.hpp>

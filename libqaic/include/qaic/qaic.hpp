// Everything an application of libqaic includes: the program container, the runtime objects and
// the buffer validation shared with qaic-runner.
#pragma once

#include <qaic/Context.hpp>
#include <qaic/Errors.hpp>
#include <qaic/InferenceHandle.hpp>
#include <qaic/InferenceSet.hpp>
#include <qaic/InferenceSetGroup.hpp>
#include <qaic/IoValidation.hpp>
#include <qaic/Partition.hpp>
#include <qaic/ProfilingHandle.hpp>
#include <qaic/QBuffer.hpp>
#include <qaic/Qpc.hpp>
#include <qaic/Types.hpp>
#include <qaic/Util.hpp>

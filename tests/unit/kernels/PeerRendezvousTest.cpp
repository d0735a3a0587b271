// SPDX-License-Identifier: Apache-2.0
// PeerRendezvous itself, parts on threads calling it directly: small collectives through the
// staging slots and large ones in place, alternating over many rounds, bit-identical on every
// part; cancel reaching parts that spin or sleep, and parts in the middle of a run of
// collectives; a timeout naming the one part that never came; every kind of disagreement
// between parts found on the staged path. The ThreadSanitizer run (make tsan) checks too that
// no part touches another part's buffer or slot without the rendezvous ordering it.
#include <gmock/gmock.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/PeerRendezvous.hpp"
#include "kernels/format/Half.hpp"

namespace qaic::kernels {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;

// Runs body(part) on a thread per part; each part's exception message, or "" when it returned.
std::vector<std::string> onParts(std::size_t parts, const std::function<void(std::size_t)>& body) {
  std::vector<std::string> errors(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      try {
        body(p);
      } catch (const std::exception& e) {
        errors[p] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

// A value of part `part` in round `round`: signs and exponents spread so that the order of the
// additions changes the bits of the sum.
float valueOf(std::size_t part, std::size_t round, std::size_t i) {
  const uint32_t h = mix(static_cast<uint32_t>(part * 7919 + round * 104729 + i * 31));
  return std::ldexp(static_cast<float>(static_cast<int>(h % 2001) - 1000), static_cast<int>(h >> 24) % 24 - 12);
}

// What one round does: the kind, the element type and the elements per part.
struct Round {
  enum Kind { SumFloat, SumHalf, Gather } kind;
  std::size_t elements;
};

// Staged and in-place collectives in turn, sizes at both sides of the staging limit.
std::vector<Round> roundsFor(const PeerRendezvous& rendezvous) {
  const std::size_t stagedFloats = rendezvous.stagedBytesPerPart() / sizeof(float);
  const std::vector<Round> cycle{{Round::SumFloat, 1},
                                 {Round::SumFloat, stagedFloats},
                                 {Round::SumFloat, stagedFloats + 16},
                                 {Round::SumHalf, 2 * stagedFloats},
                                 {Round::Gather, 37},
                                 {Round::SumFloat, 0},
                                 {Round::SumHalf, 333},
                                 {Round::Gather, stagedFloats + 16},
                                 {Round::SumFloat, 3 * stagedFloats + 5},
                                 {Round::Gather, 0}};
  std::vector<Round> rounds;
  for (std::size_t r = 0; r < 120; ++r) rounds.push_back(cycle[(r * 3 + r / cycle.size()) % cycle.size()]);
  return rounds;
}

TEST(PeerRendezvousStaging, ManyRoundsOfAlternatingSizesGiveEveryPartTheSumInPartOrder) {
  for (std::size_t parts : {2u, 3u, 4u}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    auto rendezvous = std::make_shared<PeerRendezvous>(parts, std::chrono::seconds(60));
    const auto rounds = roundsFor(*rendezvous);
    std::vector<std::size_t> wrongRounds(parts, 0);
    std::vector<uint64_t> expectedSent(parts, 0);
    const auto errors = onParts(parts, [&](std::size_t part) {
      auto exchange = rendezvous->exchange(part);
      for (std::size_t r = 0; r < rounds.size(); ++r) {
        const Round round = rounds[r];
        const std::size_t n = round.elements;
        // Some parts come late now and then, so the others sleep as well as spin.
        if (mix(static_cast<uint32_t>(r * 13 + part)) % 11 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        bool right = true;
        if (round.kind == Round::SumFloat) {
          std::vector<float> data(n), expected(n, 0.0f);
          for (std::size_t i = 0; i < n; ++i) data[i] = valueOf(part, r, i);
          for (std::size_t q = 0; q < parts; ++q) {
            for (std::size_t i = 0; i < n; ++i)
              expected[i] = q == 0 ? valueOf(q, r, i) : expected[i] + valueOf(q, r, i);
          }
          exchange->allReduceSum(static_cast<int>(r), ir::DType::Float, std::as_writable_bytes(std::span(data)));
          right = n == 0 || std::memcmp(data.data(), expected.data(), n * sizeof(float)) == 0;
        } else if (round.kind == Round::SumHalf) {
          std::vector<uint16_t> data(n), expected(n);
          std::vector<float> wide(n, 0.0f);
          for (std::size_t i = 0; i < n; ++i) data[i] = floatToHalf(valueOf(part, r, i) / 64);
          for (std::size_t q = 0; q < parts; ++q) {
            for (std::size_t i = 0; i < n; ++i) wide[i] += halfToFloat(floatToHalf(valueOf(q, r, i) / 64));
          }
          for (std::size_t i = 0; i < n; ++i) expected[i] = floatToHalf(wide[i]);
          exchange->allReduceSum(static_cast<int>(r), ir::DType::Float16, std::as_writable_bytes(std::span(data)));
          right = data == expected;
        } else {
          std::vector<float> mine(n), all(n * parts), expected;
          for (std::size_t i = 0; i < n; ++i) mine[i] = valueOf(part, r, i);
          for (std::size_t q = 0; q < parts; ++q) {
            for (std::size_t i = 0; i < n; ++i) expected.push_back(valueOf(q, r, i));
          }
          exchange->allGather(static_cast<int>(r), std::as_bytes(std::span(mine)),
                              std::as_writable_bytes(std::span(all)));
          // Bit for bit; an empty round has no data pointers to compare (memcmp's are non-null).
          right = n == 0 || std::memcmp(all.data(), expected.data(), all.size() * sizeof(float)) == 0;
        }
        if (!right) ++wrongRounds[part];
        // The counters' figure per collective (PeerRendezvous::Transfer), whichever path it took.
        if (round.kind == Round::Gather) {
          expectedSent[part] += (parts - 1) * n * sizeof(float);
        } else {
          const std::size_t elementBytes = round.kind == Round::SumFloat ? 4 : 2;
          const uint64_t own = (n * (part + 1) / parts - n * part / parts) * elementBytes;
          expectedSent[part] += (parts - 1) * own + (n * elementBytes - own);
        }
      }
    });
    for (std::size_t p = 0; p < parts; ++p) {
      EXPECT_EQ(errors[p], "") << "part " << p;
      EXPECT_EQ(wrongRounds[p], 0u) << "part " << p;
      EXPECT_EQ(rendezvous->transferredBytes(p).sent, expectedSent[p]) << "part " << p;
      EXPECT_EQ(rendezvous->transferredBytes(p).received, expectedSent[p]) << "part " << p;
    }
    EXPECT_FALSE(rendezvous->cancelled());
  }
}

// The same inputs in another order give other bits: the rounds above check the order too.
TEST(PeerRendezvousStaging, TheTestValuesDependOnTheOrderOfAddition) {
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    const float inOrder = ((valueOf(0, 1, i) + valueOf(1, 1, i)) + valueOf(2, 1, i)) + valueOf(3, 1, i);
    const float reversed = ((valueOf(3, 1, i) + valueOf(2, 1, i)) + valueOf(1, 1, i)) + valueOf(0, 1, i);
    differ += std::bit_cast<uint32_t>(inOrder) != std::bit_cast<uint32_t>(reversed);
  }
  EXPECT_GT(differ, 50u);
}

TEST(PeerRendezvousBreaks, CancelReachesPartsWhetherTheySpinOrSleep) {
  // The cancel comes from at once to a millisecond after the parts arrived: some spin, some
  // sleep on the futex by then.
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(trial);
    auto rendezvous = std::make_shared<PeerRendezvous>(3, std::chrono::seconds(60));
    std::atomic<int> arriving{0};
    std::thread canceller([&] {
      while (arriving.load() < 2) std::this_thread::yield();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(trial * trial);
      while (std::chrono::steady_clock::now() < until) {
      }
      rendezvous->cancel("card " + std::to_string(trial) + " lost");
    });
    const auto errors = onParts(2, [&](std::size_t part) {
      std::vector<float> data(trial % 2 ? 8 : 40000, 1.0f);  // staged, then in place
      auto exchange = rendezvous->exchange(part);
      ++arriving;
      exchange->allReduceSum(5, ir::DType::Float, std::as_writable_bytes(std::span(data)));
    });
    canceller.join();
    for (std::size_t p = 0; p < 2; ++p) {
      EXPECT_EQ(errors[p], "part " + std::to_string(p) + ", collective 5: card " + std::to_string(trial) + " lost");
    }
    std::vector<float> late(8);
    EXPECT_THAT(
        [&] {
          rendezvous->exchange(2)->allGather(6, std::as_bytes(std::span(late).first(2)),
                                             std::as_writable_bytes(std::span(late).first(6)));
        },
        ::testing::ThrowsMessage<ExecutionError>(
            std::string("part 2, collective 6: card " + std::to_string(trial) + " lost")));
  }
}

// Cancelled while every part runs collectives back to back: every part fails at the same
// collective (a step completes for every part or for none), and a part that failed may reuse
// its buffer at once (no other part still reads or writes it; TSan would see it).
TEST(PeerRendezvousBreaks, CancelInARunOfCollectivesStopsEveryPartAtTheSameOne) {
  constexpr std::size_t kParts = 4;
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE(trial);
    auto rendezvous = std::make_shared<PeerRendezvous>(kParts, std::chrono::seconds(60));
    std::atomic<int> rounds{0};
    std::vector<int> failedAt(kParts, -1);
    std::thread canceller([&] {
      while (rounds.load() < 40 + 25 * trial) std::this_thread::yield();
      rendezvous->cancel("stopped");
    });
    const auto errors = onParts(kParts, [&](std::size_t part) {
      std::vector<float> data(20000);
      auto exchange = rendezvous->exchange(part);
      for (int r = 0;; ++r) {
        const std::size_t n = r % 3 == 0 ? data.size() : 1 + static_cast<std::size_t>(r) % 50;
        std::fill_n(data.begin(), n, static_cast<float>(part));
        failedAt[part] = r;
        try {
          exchange->allReduceSum(r, ir::DType::Float, std::as_writable_bytes(std::span(data).first(n)));
        } catch (const ExecutionError&) {
          std::fill(data.begin(), data.end(), -1.0f);
          throw;
        }
        if (part == 0) ++rounds;
      }
    });
    canceller.join();
    for (std::size_t p = 0; p < kParts; ++p) {
      EXPECT_EQ(errors[p], "part " + std::to_string(p) + ", collective " + std::to_string(failedAt[0]) + ": stopped");
      EXPECT_EQ(failedAt[p], failedAt[0]) << "part " << p;
    }
  }
}

// Parts 0 and 1 go on to a second collective, part 2 never comes: they time out naming it
// alone, after a staged first collective and after an in-place one.
TEST(PeerRendezvousBreaks, TimeoutNamesThePartThatNeverCame) {
  for (std::size_t firstFloats : {4u, 30000u}) {
    for (std::size_t secondFloats : {4u, 30000u}) {
      SCOPED_TRACE(std::to_string(firstFloats) + " then " + std::to_string(secondFloats) + " floats");
      auto rendezvous = std::make_shared<PeerRendezvous>(3, std::chrono::milliseconds(200));
      const auto errors = onParts(3, [&](std::size_t part) {
        auto exchange = rendezvous->exchange(part);
        std::vector<float> data(firstFloats, 1.0f);
        exchange->allReduceSum(0, ir::DType::Float, std::as_writable_bytes(std::span(data)));
        if (data[0] != 3.0f) throw std::runtime_error("wrong sum");
        if (part == 2) return;
        std::vector<float> next(secondFloats, 1.0f);
        exchange->allReduceSum(1, ir::DType::Float, std::as_writable_bytes(std::span(next)));
      });
      for (std::size_t p = 0; p < 2; ++p) {
        EXPECT_EQ(errors[p],
                  "part " + std::to_string(p) + ", collective 1: timed out after 200 ms waiting for part(s) 2");
      }
      EXPECT_EQ(errors[2], "");
      std::vector<float> late(4);
      EXPECT_THAT(
          [&] { rendezvous->exchange(2)->allReduceSum(1, ir::DType::Float, std::as_writable_bytes(std::span(late))); },
          ::testing::ThrowsMessage<ExecutionError>(
              "part 2, collective 1: timed out after 200 ms waiting for part(s) 2"));
      EXPECT_TRUE(rendezvous->cancelled());
    }
  }
}

// One call of each part; the two must be the same collective.
struct Call {
  enum Kind { Sum, Gather } kind;
  int collective;
  ir::DType type;
  std::size_t bytes;  // per part
};

TEST(PeerRendezvousBreaks, EveryDisagreementIsFoundOnTheStagedPathToo) {
  const std::size_t inPlaceBytes = PeerRendezvous::kStagedBytesSleeping;  // over 2 parts' slots
  const struct {
    const char* what;
    Call calls[2];
    std::string named;  // in the message, besides "parts disagree on the collective"
  } cases[] = {
      {"ids",
       {{Call::Sum, 1, ir::DType::Float, 64}, {Call::Sum, 2, ir::DType::Float, 64}},
       "part 0 calls all_reduce_sum 1 of 64 bytes of TL_FLOAT, part 1 all_reduce_sum 2 of 64 bytes of TL_FLOAT"},
      {"kinds",
       {{Call::Sum, 1, ir::DType::Float, 64}, {Call::Gather, 1, ir::DType::Float, 64}},
       "part 1 all_gather 1 of 64 bytes"},
      {"sizes",
       {{Call::Sum, 1, ir::DType::Float, 64}, {Call::Sum, 1, ir::DType::Float, 128}},
       "part 1 all_reduce_sum 1 of 128 bytes"},
      {"staged against in place",
       {{Call::Sum, 1, ir::DType::Float, 64}, {Call::Sum, 1, ir::DType::Float, inPlaceBytes}},
       "part 1 all_reduce_sum 1 of " + std::to_string(inPlaceBytes) + " bytes"},
      {"element types",
       {{Call::Sum, 1, ir::DType::Float, 64}, {Call::Sum, 1, ir::DType::Float16, 64}},
       "part 1 all_reduce_sum 1 of 64 bytes of TL_FLOAT16"},
      {"gathered sizes",
       {{Call::Gather, 3, ir::DType::Float, 8}, {Call::Gather, 3, ir::DType::Float, 12}},
       "part 0 calls all_gather 3 of 8 bytes, part 1 all_gather 3 of 12 bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto rendezvous = std::make_shared<PeerRendezvous>(2, std::chrono::seconds(60));
    // Another collective first, so the disagreement comes at a later step than the first.
    const auto errors = onParts(2, [&](std::size_t part) {
      auto exchange = rendezvous->exchange(part);
      float one = 1.0f;
      exchange->allReduceSum(0, ir::DType::Float, std::as_writable_bytes(std::span(&one, 1)));
      const Call& call = c.calls[part];
      std::vector<std::byte> data(call.bytes), all(2 * call.bytes);
      if (call.kind == Call::Sum)
        exchange->allReduceSum(call.collective, call.type, data);
      else
        exchange->allGather(call.collective, data, all);
    });
    for (std::size_t p = 0; p < 2; ++p) {
      EXPECT_THAT(errors[p],
                  AllOf(HasSubstr("part " + std::to_string(p) + ", collective " +
                                  std::to_string(c.calls[p].collective) + ": parts disagree on the collective"),
                        HasSubstr(c.named)));
    }
    EXPECT_TRUE(rendezvous->cancelled());
  }
}

}  // namespace
}  // namespace qaic::kernels

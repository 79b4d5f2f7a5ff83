// The only place slide opens OpenMP parallel regions. Two things the environment can do to a
// region are handled here once, for every caller:
// - the team can be smaller than asked (OMP_THREAD_LIMIT, OMP_DYNAMIC, a nested region), so work
//   is split by the team's real size, never by the thread count that was requested;
// - an exception leaving a region calls std::terminate (and kills the Python process), so each
//   piece of work runs under a capture and the first exception is rethrown after the threads join.
// A body must not contain barriers or worksharing constructs of its own: a thread that threw
// would never reach them.
#pragma once
#include <omp.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>

namespace slide {

// The first exception thrown by any thread of a team.
class FirstError {
 public:
  template <class F>
  void capture(F&& f) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;  // the operation has failed already
    try {
      f();
    } catch (...) {
#pragma omp critical(slide_first_error)
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

// body(thread, team_size) once on each member of a team of at most `threads`.
template <class Body>
void parallel_team(int threads, Body body) {
  FirstError error;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    error.capture([&] { body(t, team); });
  }
  error.rethrow();
}

// body(local, i) for every i in [0, count), in chunks of `chunk` handed out dynamically over a
// team of at most `threads`; each team member first makes its own scratch with make_local().
template <class MakeLocal, class Body>
void parallel_for(int threads, std::int64_t count, std::int64_t chunk, MakeLocal make_local, Body body) {
  FirstError error;
#pragma omp parallel num_threads(threads)
  {
    std::optional<decltype(make_local())> local;
    error.capture([&] { local.emplace(make_local()); });
#pragma omp for schedule(dynamic, chunk)
    for (std::int64_t i = 0; i < count; ++i)
      if (local) error.capture([&] { body(*local, i); });
  }
  error.rethrow();
}

// body(i) for every i in [0, count), split evenly over a team of at most `threads`.
template <class Body>
void parallel_for(int threads, std::int64_t count, Body body) {
  parallel_team(threads, [&](int t, int team) {
    const std::int64_t begin = count * t / team, end = count * (t + 1) / team;
    for (std::int64_t i = begin; i < end; ++i) body(i);
  });
}

}  // namespace slide

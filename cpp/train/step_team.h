// How many threads a training step shares. A step is a dozen or so parallel regions. On a quiet host
// a region's fork and join cost little (about 0.2 us more on two threads than on one); where another
// process holds one of the cores, a join can wait a whole scheduler slice for a member that was
// descheduled. A step whose work is too small to gain from a second thread therefore runs on one (as
// BLAS libraries run a small product on one thread whatever their thread count). Measured in
// benches/step_team.py.
#pragma once
#include <cstdint>

#include "common/sparse_view.h"
#include "nn/network.h"

namespace slide {

// Below this many multiply-adds in a batch's forward pass, a step runs on one thread.
constexpr std::int64_t kDefaultParallelWorkFloor = 100000;

// The floor in use (process-wide): kDefaultParallelWorkFloor unless set; 0 splits every step.
std::int64_t parallel_work_floor();
void set_parallel_work_floor(std::int64_t multiply_adds);

// Multiply-adds of the forward pass of batch `rows[0..count)`: each sample's input features times
// the embedding width, and for each layer the rows it computes times its width (a sampled layer's:
// the most its tables can return, at least its active-set floor).
std::int64_t step_work(const Network& net, const CsrFloat& x, const std::int64_t* rows, std::int64_t count);

// For its lifetime, net.step_threads() is the team of a step of `work` multiply-adds.
class StepTeam {
 public:
  StepTeam(Network& net, std::int64_t work);
  ~StepTeam();
  StepTeam(const StepTeam&) = delete;
  StepTeam& operator=(const StepTeam&) = delete;

 private:
  Network& net_;
};

}  // namespace slide

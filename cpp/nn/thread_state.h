// Everything a HOGWILD worker owns: its RNG (seeded seed + thread id), the activations and
// scratch of every layer, the rows it touched, and running statistics. Created once per thread.
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.h"
#include "nn/activations.h"
#include "nn/layer_scratch.h"

namespace slide {

struct ThreadState {
  explicit ThreadState(std::uint64_t seed) : rng(seed) {}

  Rng rng;
  Activations hidden0;                    // the input layer's output
  std::vector<LayerScratch> layers;       // one per fully connected layer
  std::vector<std::uint32_t> input_touched;
  std::vector<std::int32_t> input_ids;    // the sample's features after dropout (Network::input_view)
  std::vector<float> input_values;        // and their values after dropout and normalisation
  std::vector<double> label_exp;         // the sample's labels' exponentials (OutputLoss::kDecoupled)
  double loss = 0.0;
  std::int64_t samples = 0;
  std::int64_t active = 0;                // output-layer active neurons, summed over samples

  void reset_stats() {
    loss = 0.0;
    samples = 0;
    active = 0;
    for (LayerScratch& l : layers) l.retrieved = 0;
  }
};

}  // namespace slide

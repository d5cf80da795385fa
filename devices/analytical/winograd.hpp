// Tile arithmetic of Winograd's minimal filtering algorithms F(m x m, r x r) for a convolution
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016, sections 4-5):
// an m x m output tile is computed from an a x a input tile, a = m + r - 1, with a^2
// element-wise multiplies where a direct r x r convolution takes m^2 r^2. cuDNN's 3x3
// algorithms are F(2x2, 3x3) (WINOGRAD, fused: 36/16 = 2.25x fewer multiplies) and
// F(4x4, 3x3) (WINOGRAD_NONFUSED: 144/36 = 4x, its transformed tiles 36/16 = 2.25x the
// tensor they come from). The kernel model (op_cost.cpp) and the cuDNN workspace estimate
// (conv_workspace.cpp) take these numbers from here, so they cannot drift apart.
#pragma once

namespace xpusim::analytical {

struct WinogradTile {
  int m = 0;  // output tile side
  int r = 0;  // filter side
  constexpr int input_tile() const { return m + r - 1; }
  // Multiplies of a direct convolution per multiply of the algorithm: m^2 r^2 / a^2.
  constexpr double multiply_reduction() const {
    return static_cast<double>(m * m * r * r) / static_cast<double>(input_tile() * input_tile());
  }
  // Elements of transformed tiles per element of the tensor transformed (a^2 / m^2): an a x a
  // tile per m x m block of the input, and a^2 products per m x m block of the output.
  constexpr double tile_expansion() const {
    return static_cast<double>(input_tile() * input_tile()) / static_cast<double>(m * m);
  }
};

inline constexpr WinogradTile kWinogradFused3x3{2, 3};     // cuDNN WINOGRAD, F(2x2, 3x3)
inline constexpr WinogradTile kWinogradNonfused3x3{4, 3};  // cuDNN WINOGRAD_NONFUSED, F(4x4, 3x3)

static_assert(kWinogradFused3x3.multiply_reduction() == 2.25, "F(2x2, 3x3): 36 / 16");
static_assert(kWinogradNonfused3x3.multiply_reduction() == 4.0, "F(4x4, 3x3): 144 / 36");
static_assert(kWinogradNonfused3x3.tile_expansion() == 2.25, "F(4x4, 3x3): 6x6 tiles per 4x4 block");

}  // namespace xpusim::analytical

// x_axis.h — what a plot's x-axis counts: optimizer steps, tokens seen or training time.
//
// Runs with different batch sizes or context lengths are only comparable per token, and a
// slow configuration per second; the live plots and the comparison view share this one
// choice. Series are stored by step; StepToX maps a run's steps to the chosen x and back.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include "qklab/store/records.h"

class QComboBox;
class QWidget;

namespace qklab::gui {

enum class XAxisKind { Step, Tokens, Time };

// "step", "tokens seen", "training time (s)". Training time is the time spent in training
// steps, summed (each step's tokens / its tokens/s): validation, checkpoints and pauses are
// left out, so it is not the wall-clock time since the start.
QString xAxisTitle(XAxisKind kind);
// A point on that axis for a readout: "step 120", "tokens seen 1.28e+04",
// "training time 12.3 s".
QString xAxisValueText(XAxisKind kind, double x);
// A combo box offering the three, for a plot header; the kind is its current data.
QComboBox* makeXAxisChoice(QWidget* parent);
XAxisKind xAxisKindOf(const QComboBox* choice);

// One run's step -> x. Steps are added in order; a step past the last one added (a probe
// reported before its step's metrics) is extrapolated at the last step's rate.
class StepToX {
  public:
    StepToX() = default;
    StepToX(XAxisKind kind, int64_t batchSize, int64_t seqLen)
        : m_kind(kind), m_batch(batchSize), m_seqLen(seqLen) {}
    XAxisKind kind() const { return m_kind; }
    void add(const StepMetrics& m);
    void add(const std::vector<StepMetrics>& steps, size_t from = 0);
    // x at the end of `step`: tokens or seconds of training through that step.
    double operator()(double step) const;
    // The step whose x is nearest to `x` (the inverse, for hover readouts).
    int64_t stepAt(double x) const;

  private:
    double perStep() const;  // x of one more step, from the latest rate

    XAxisKind m_kind = XAxisKind::Step;
    int64_t m_batch = 1, m_seqLen = 1;
    int64_t m_firstStep = 0;
    std::vector<double> m_ends;  // x at the end of step m_firstStep + i
};

}  // namespace qklab::gui

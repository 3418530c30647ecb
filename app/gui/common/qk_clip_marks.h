// qk_clip_marks.h — QK-Clip (Kimi K2's MuonClip) on the max-logit plot: one marker per step at
// which QK-Clip scaled some head's W_q and W_k, drawn at that step's largest S_max (where the
// logit stood when it was clipped), explained on hover.
//
// The live plots keep one QkClipMarks for the whole run (set from a stored run, grown by live
// batches); the comparison view draws each run's clipSteps() in the run's colour.
#pragma once

#include <QString>
#include <cstdint>
#include <functional>
#include <vector>

#include "qklab/records.h"

class QCustomPlot;
class QCPGraph;
class QPoint;

namespace qklab::gui {

// The clips of one step.
struct ClipStep {
    int64_t step = 0;
    int heads = 0;         // heads scaled at this step, over all layers
    double maxSMax = 0;    // the largest S_max among them
    double minFactor = 1;  // the strongest scaling: the largest S_max's under one tau
};

// The clips grouped by step, in step order (the order of `clips` does not matter). layer >= 0
// keeps only that layer's clips.
std::vector<ClipStep> clipSteps(const std::vector<QkClip>& clips, int layer = -1);

// "QK-Clip: 3 heads, S_max up to 134, factor 0.864" (plain text, for the hover readout).
QString clipText(const ClipStep& c);
// The marker's tooltip (rich text): the step, clipText and what the factor did.
QString clipHtml(const ClipStep& c);

class QkClipMarks {
  public:
    using StepToXFn = std::function<double(double step)>;

    // Marks go on `plot` (its x and y axes); the graph is made with the first clip, so a run
    // without QK-Clip adds nothing to the plot or its legend.
    explicit QkClipMarks(QCustomPlot* plot) : m_plot(plot) {}

    // Replaces every mark with those of `clips` (a whole run, or after an x-axis change).
    void set(const std::vector<QkClip>& clips, const StepToXFn& x);
    // Adds clips (a live batch); a step already marked gains the new heads.
    void add(const std::vector<QkClip>& clips, const StepToXFn& x);
    void clear();  // removes the graph too

    const std::vector<ClipStep>& steps() const { return m_steps; }
    const ClipStep* atStep(int64_t step) const;  // null when that step had no clip
    // The marked step whose marker is within `pixels` of pos on the plot, if any.
    const ClipStep* hit(const QPoint& pos, const StepToXFn& x, double pixels = 8) const;
    QCPGraph* graph() const { return m_graph; }  // null until the first clip

  private:
    void draw(const ClipStep& c, const StepToXFn& x);

    QCustomPlot* m_plot;
    QCPGraph* m_graph = nullptr;
    std::vector<ClipStep> m_steps;  // by step
};

}  // namespace qklab::gui

// qk_clip_marks.h — QK-Clip (Kimi K2's MuonClip) on the max-logit plot: one marker per step at
// which QK-Clip scaled some head's W_q and W_k, drawn at that step's largest S_max (where the
// logit stood when it was clipped), explained on hover.
//
// Dense clipping (a low tau clips most steps: 763 of 1000) would draw the markers edge to
// edge, a band over the curves and the threshold labels. When more than one marker per
// kClipBucketPixels of the axis rect would be drawn, the visible clips are gathered into
// buckets of that many pixels and drawn as a thin strip along the bottom of the axis rect,
// one cell per bucket, darker for more clipped steps; each cell's hover text counts the steps
// and head clips it stands for. Sparse clips keep their one marker per step. The buckets
// follow the x range and the plot's size (recomputed whenever the plot lays itself out).
//
// The live plots keep one QkClipMarks for the whole run (set from a stored run, grown by live
// batches); the comparison view draws each run's clipSteps() in the run's colour.
#pragma once

#include <QMetaObject>
#include <QRect>
#include <QString>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "qklab/store/records.h"

class QCustomPlot;
class QCPGraph;
class QCPItemRect;
class QPoint;

namespace qklab::gui {

// The clips of one step.
struct ClipStep {
    int64_t step = 0;
    int heads = 0;         // heads scaled at this step, over all layers
    double maxSMax = 0;    // the largest S_max among them
    double minFactor = 1;  // the strongest scaling: the largest S_max's under one tau
};

// What one drawn mark stands for: one step (a marker), or the clipped steps of one bucket
// (a strip cell). `summary` sums their heads and keeps the largest S_max and smallest factor;
// its step is the step of that largest S_max, the one a click selects.
struct ClipMark {
    ClipStep summary;
    int64_t firstStep = 0, lastStep = 0;
    int steps = 1;
    double xLo = 0, xHi = 0;  // the bucket on the x axis (a marker: its step's x, twice)
};

// Pixels per mark beyond which the marks are aggregated into buckets this wide.
constexpr int kClipBucketPixels = 4;
// The height of the strip of aggregated marks at the bottom of the axis rect.
constexpr int kClipStripPixels = 7;

// The clips grouped by step, in step order (the order of `clips` does not matter). layer >= 0
// keeps only that layer's clips.
std::vector<ClipStep> clipSteps(const std::vector<QkClip>& clips, int layer = -1);

// "QK-Clip: 3 heads, S_max up to 134, factor 0.864" (plain text, for the hover readout).
QString clipText(const ClipStep& c);
// The marker's tooltip (rich text): the step, clipText and what the factor did.
QString clipHtml(const ClipStep& c);
// A mark's tooltip: clipHtml for one step; for a bucket, how many steps (first–last) and head
// clips it stands for, the largest S_max and where it was (the step a click selects).
QString clipMarkHtml(const ClipMark& m);

class QkClipMarks {
  public:
    using StepToXFn = std::function<double(double step)>;

    // Marks go on `plot` (its x and y axes); the graph is made with the first clip, so a run
    // without QK-Clip adds nothing to the plot or its legend.
    explicit QkClipMarks(QCustomPlot* plot);
    ~QkClipMarks();
    QkClipMarks(const QkClipMarks&) = delete;
    QkClipMarks& operator=(const QkClipMarks&) = delete;

    // Replaces every mark with those of `clips` (a whole run, or after an x-axis change).
    void set(const std::vector<QkClip>& clips, const StepToXFn& x);
    // Adds clips (a live batch); a step already marked gains the new heads.
    void add(const std::vector<QkClip>& clips, const StepToXFn& x);
    void clear();  // removes the graph too

    const std::vector<ClipStep>& steps() const { return m_steps; }
    const ClipStep* atStep(int64_t step) const;  // null when that step had no clip
    // The mark within `pixels` of pos on the plot (a marker, or the strip cell under pos),
    // if any.
    const ClipMark* hit(const QPoint& pos, double pixels = 8) const;
    QCPGraph* graph() const { return m_graph; }  // null until the first clip
    // What is drawn now: one mark per step (markers), or per bucket (strip cells).
    const std::vector<ClipMark>& marks() const { return m_marks; }
    bool aggregated() const { return m_aggregated; }
    // Recomputes the marks for the plot's current x range and size (done on every layout).
    void relayout();

  private:
    struct Geometry {
        double lower = 0, upper = 0;
        QRect rect;
        bool visible = true;
        bool operator==(const Geometry& o) const {
            return lower == o.lower && upper == o.upper && rect == o.rect && visible == o.visible;
        }
    };
    void ensureGraph();
    void showModeInLegend();
    void markEachStep();
    void markBuckets(const Geometry& g);
    void drawStrip(const Geometry& g);
    QCPItemRect* stripCell(size_t i);

    QCustomPlot* m_plot;
    QCPGraph* m_graph = nullptr;
    std::vector<ClipStep> m_steps;  // by step
    StepToXFn m_x;
    std::vector<ClipMark> m_marks;
    bool m_aggregated = false;
    std::vector<QCPItemRect*> m_cells;   // the strip's cells, reused; extra ones hidden
    std::optional<Geometry> m_drawnFor;  // what m_marks were computed for
    QMetaObject::Connection m_onLayout;
};

}  // namespace qklab::gui

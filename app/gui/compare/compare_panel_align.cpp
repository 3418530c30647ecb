// compare_panel_align.cpp — the comparison's "Align at" chooser (issue 40, item 4): every
// run's curves against the steps from its own anchor (qklab/analysis/alignment.h), and the legend's
// word on each run's anchor.
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

#include "compare/compare_panel.h"
#include "compare/compare_plots.h"
#include "qklab/analysis/alignment.h"
#include "qklab/util/error.h"

namespace qklab::gui {
namespace {

// The part of a kind's syntax after its name: "N", "METRIC>VALUE", "KIND"; "" for none.
QString argumentOf(const AlignKindInfo& k) {
    const QString syntax = QString::fromLatin1(k.syntax);
    const qsizetype colon = syntax.indexOf(QLatin1Char(':'));
    return colon < 0 ? QString() : syntax.mid(colon + 1);
}

}  // namespace

// The kinds come from the table of rules; a kind with an argument shows a field for it.
QWidget* ComparePanel::buildAlignControls() {
    auto* box = new QWidget;
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    auto* label = new QLabel(tr("Align at"));
    m_alignKind = new QComboBox;
    m_alignKind->setObjectName(QStringLiteral("compareAlignKind"));
    QString tip =
        tr("Every run's x axis becomes the steps from its own anchor (a vertical line "
           "at 0); a run without one is greyed in the legend with the reason.");
    m_alignKind->addItem(tr("none"), QString());
    for (const AlignKindInfo& k : alignKinds()) {
        m_alignKind->addItem(QString::fromLatin1(k.title), QString::fromLatin1(k.name));
        tip += QStringLiteral("\n%1: %2")
                   .arg(QString::fromLatin1(k.syntax), QString::fromLatin1(k.help));
    }
    m_alignKind->setToolTip(tip);
    label->setBuddy(m_alignKind);
    m_alignArg = new QLineEdit;
    m_alignArg->setObjectName(QStringLiteral("compareAlignArgument"));
    m_alignArg->setMaximumWidth(170);
    m_alignArg->hide();
    row->addWidget(label);
    row->addWidget(m_alignKind);
    row->addWidget(m_alignArg);
    connect(m_alignKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        const AlignKindInfo* info = nullptr;
        for (const AlignKindInfo& k : alignKinds())
            if (m_alignKind->currentData().toString() == QLatin1String(k.name)) info = &k;
        const QString arg = info ? argumentOf(*info) : QString();
        m_alignArg->setVisible(!arg.isEmpty());
        m_alignArg->setPlaceholderText(arg);
        alignmentChanged();
    });
    connect(m_alignArg, &QLineEdit::editingFinished, this, &ComparePanel::alignmentChanged);
    return box;
}

// The chosen kind and argument as one rule; one that does not parse aligns nothing and says
// why on the field. While aligned, the x-axis choice does not apply (every axis counts steps).
void ComparePanel::alignmentChanged() {
    const QString name = m_alignKind->currentData().toString();
    std::optional<AlignRule> rule;
    QString problem;
    if (!name.isEmpty()) {
        const QString text =
            m_alignArg->isVisibleTo(this) ? name + QLatin1Char(':') + m_alignArg->text() : name;
        try {
            rule = parseAlignRule(text.toStdString());
        } catch (const Error& e) {
            problem = QString::fromStdString(e.what());
        }
    }
    const bool waiting = !problem.isEmpty() && m_alignArg->text().isEmpty();  // not typed yet
    m_alignArg->setStyleSheet(problem.isEmpty() || waiting
                                  ? QString()
                                  : QStringLiteral("QLineEdit { border: 1px solid #d03030; }"));
    m_alignArg->setToolTip(problem.isEmpty() ? tr("The rule's argument") : problem);
    m_xChoice->setEnabled(!rule);
    if (rule != std::nullopt || m_plots->alignment() != std::nullopt) m_plots->setAlignment(rule);
    fillLegend();
}

bool ComparePanel::setAlignment(const QString& rule) {
    const qsizetype colon = rule.indexOf(QLatin1Char(':'));
    const QString name = colon < 0 ? rule : rule.left(colon);
    const int index = m_alignKind->findData(name);
    if (index < 0) {
        m_alignKind->setCurrentIndex(0);
        return rule.isEmpty();
    }
    {
        const QSignalBlocker block(m_alignKind);
        m_alignKind->setCurrentIndex(index);
    }
    m_alignArg->setText(colon < 0 ? QString() : rule.mid(colon + 1));
    const AlignKindInfo& k = alignKinds()[size_t(index - 1)];
    m_alignArg->setVisible(!argumentOf(k).isEmpty());
    m_alignArg->setPlaceholderText(argumentOf(k));
    alignmentChanged();
    return m_plots->alignment().has_value();
}

QString ComparePanel::alignment() const {
    const auto& rule = m_plots->alignment();
    return rule ? QString::fromStdString(alignRuleText(*rule)) : QString();
}

void ComparePanel::alignLegend(std::vector<LegendEntry>& entries) const {
    const std::vector<Anchor>& anchors = m_plots->anchors();
    if (!m_plots->alignment() || anchors.size() != m_comparison.runs.size()) return;
    const bool perRun = m_plots->groups().empty();
    for (size_t i = 0; i < anchors.size(); ++i) {
        const Anchor& a = anchors[i];
        if (a.step && perRun)
            entries[i].label += tr(" (0 = step %1)").arg(*a.step);
        else if (!a.step)
            entries.push_back(
                {QColor(Qt::gray),
                 tr("%1: not drawn, %2")
                     .arg(m_comparison.runs[i].label(), QString::fromStdString(a.what)),
                 true});
    }
    if (perRun)  // a greyed run is listed once, after the drawn ones
        for (size_t i = anchors.size(); i-- > 0;)
            if (!anchors[i].step) entries.erase(entries.begin() + std::ptrdiff_t(i));
}

}  // namespace qklab::gui

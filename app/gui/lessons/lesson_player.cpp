// lesson_player.cpp — the panel's widgets, navigation and the callout area.
#include "lessons/lesson_player.h"

#include <QEvent>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStyle>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextList>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "lessons/lesson_keys.h"
#include "qklab/analysis/lesson_fit.h"

namespace qklab::gui {

namespace {
QString fromStd(const std::string& s) {
    return QString::fromStdString(s);
}
}  // namespace

LessonPlayer::LessonPlayer(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    m_title = new QLabel(tr("No lesson open: File ▸ Open lesson…"));
    m_title->setObjectName(QStringLiteral("lessonTitle"));
    m_title->setWordWrap(true);
    layout->addWidget(m_title);

    auto* head = new QHBoxLayout;
    m_counter = new QLabel;
    m_counter->setObjectName(QStringLiteral("lessonCounter"));
    m_stepTitle = new QLabel;
    m_stepTitle->setObjectName(QStringLiteral("lessonStepTitle"));
    m_stepTitle->setWordWrap(true);
    head->addWidget(m_counter);
    head->addWidget(m_stepTitle, 1);
    layout->addLayout(head);

    m_error = new QLabel;
    m_error->setObjectName(QStringLiteral("lessonError"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("color: #c00000;"));
    m_error->hide();
    layout->addWidget(m_error);

    m_text = new QTextBrowser;
    m_text->setObjectName(QStringLiteral("lessonText"));
    m_text->setOpenExternalLinks(true);
    layout->addWidget(m_text, 3);
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("lessonStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    buildCallout(layout);
    buildNavigation(layout);
    buildNotes(layout);
    applyFonts();
    refresh();
}

// Sizes relative to the panel's own font, so that presenter mode's larger application font
// carries the title and the callout with it.
void LessonPlayer::applyFonts() {
    QFont big = font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.25);
    m_title->setFont(big);
    QFont bold = font();
    bold.setBold(true);
    m_stepTitle->setFont(bold);
    m_counter->setFont(bold);
    // Bold, at the text's size: the border and the colour make it loud, and the lesson
    // column's budget (qklab/analysis/lesson_fit.h) counts its lines as the text's.
    m_calloutText->setFont(bold);
    // The step's text keeps a few lines when a long callout needs the room.
    m_text->setMinimumHeight(3 * fontMetrics().lineSpacing() + 12);
}

// The callout takes the height its text needs, as far as the rest of the panel can shrink
// (the step's text yields down to a few lines); beyond that it scrolls.
void LessonPlayer::fitCallout() {
    if (m_callout->isHidden()) return;
    // The step's text takes no more height than its lines while a callout shows: the rest is
    // the callout's (at 1280x720 the text's share left the callout's last line to scroll).
    const int textNeeded =
        int(std::ceil(m_text->document()->size().height())) + 2 * m_text->frameWidth() + 2;
    m_text->setMaximumHeight(std::max(m_text->minimumHeight(), textNeeded));
    // Measured at the scroll area's width less a scroll bar's: the height this gives fits at
    // either width, so a scroll bar shown once (narrowing the text) does not keep itself.
    const int bar = m_calloutScroll->style()->pixelMetric(QStyle::PM_ScrollBarExtent);
    const int width = std::max(50, m_calloutScroll->width() - bar);
    const int needed = m_calloutText->heightForWidth(width) + 4;
    const int others = layout()->minimumSize().height() - m_calloutScroll->minimumHeight();
    const int room = std::max(3 * fontMetrics().height(), height() - others);
    m_calloutScroll->setMinimumHeight(std::min(needed, room));
    m_calloutScroll->setMaximumHeight(needed);
}

void LessonPlayer::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitCallout();
    // Again once the layout has given the callout its new width (the dock's share of a
    // presenter screen arrives after the text was measured at the old one).
    QTimer::singleShot(0, this, &LessonPlayer::fitCallout);
}

void LessonPlayer::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        applyFonts();
        fitCallout();
    }
}

void LessonPlayer::buildCallout(QVBoxLayout* layout) {
    // The loudest thing in the panel: what just happened in the run, and which plot shows it.
    m_callout = new QFrame;
    m_callout->setObjectName(QStringLiteral("lessonCallout"));
    m_callout->setStyleSheet(
        QStringLiteral("QFrame#lessonCallout { border: 3px solid #e8590c; border-radius: 6px;"
                       " background: rgba(255, 170, 0, 60); }"));
    auto* box = new QVBoxLayout(m_callout);
    m_calloutText = new QLabel;
    m_calloutText->setObjectName(QStringLiteral("lessonCalloutText"));
    m_calloutText->setTextFormat(Qt::MarkdownText);
    m_calloutText->setWordWrap(true);
    m_calloutText->setAlignment(Qt::AlignLeft | Qt::AlignTop);  // spare height below, not above
    // A long callout (a diagnosis) scrolls rather than being cut off on a 1280x720 projector.
    m_calloutScroll = new QScrollArea;
    m_calloutScroll->setObjectName(QStringLiteral("lessonCalloutScroll"));
    m_calloutScroll->setWidget(m_calloutText);
    m_calloutScroll->setWidgetResizable(true);
    m_calloutScroll->setFrameShape(QFrame::NoFrame);
    m_calloutScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_calloutScroll->setStyleSheet(QStringLiteral("background: transparent;"));
    // The button says every way on: a teacher at the back of the room holds a clicker.
    m_continue = new QPushButton(tr("Continue (Space or clicker)"));
    m_continue->setObjectName(QStringLiteral("lessonContinue"));
    m_continue->setToolTip(
        tr("Training waits here. Go on with this button, Space, or Page Down (a presentation "
           "clicker's Next); Page Down moves to the next step once nothing waits."));
    m_continue->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    box->addWidget(m_calloutScroll, 1);
    box->addWidget(m_continue, 0, Qt::AlignLeft);
    box->addStretch(0);  // height the text does not need goes below Continue, not around it
    m_callout->hide();
    layout->addWidget(m_callout);
    connect(m_continue, &QPushButton::clicked, this, [this] {
        clearCallout();
        emit resumeRequested();
    });
}

void LessonPlayer::buildSourceChoice(QVBoxLayout* layout) {
    m_trainLive = new QPushButton(tr("Train live"));
    m_trainLive->setObjectName(QStringLiteral("lessonTrainLive"));
    m_trainLive->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    m_trainLive->setToolTip(tr("Train this step's run now, on this machine"));
    m_trainLive->hide();
    m_replayInstead = new QPushButton(tr("Replay the recorded run instead"));
    m_replayInstead->setObjectName(QStringLiteral("lessonReplayInstead"));
    m_replayInstead->setToolTip(
        tr("Too slow here? Play the run recorded for this step through the same views"));
    auto* row = new QHBoxLayout;
    row->addWidget(m_trainLive);
    row->addWidget(m_replayInstead);
    row->addStretch(1);
    layout->addLayout(row);
    connect(m_replayInstead, &QPushButton::clicked, this, [this] {
        endSourceChoice();
        emit replayInsteadRequested();
    });
    connect(m_trainLive, &QPushButton::clicked, this, [this] {
        endSourceChoice();
        emit trainLiveRequested();
    });
}

void LessonPlayer::offerSourceChoice(bool replayFirst) {
    m_choiceWaiting = true;
    m_replayFirst = replayFirst;
    const QString key = tr(" (Space)");
    m_trainLive->setText(tr("Train live") + (replayFirst ? QString() : key));
    m_replayInstead->setText(tr("Replay the recorded run") + (replayFirst ? key : QString()));
    m_trainLive->show();
    m_replayInstead->show();
}

void LessonPlayer::endSourceChoice() {
    if (!m_choiceWaiting) return;
    m_choiceWaiting = false;
    m_trainLive->hide();
    m_replayInstead->setText(tr("Replay the recorded run instead"));
    showReplayButton();
}

void LessonPlayer::buildNavigation(QVBoxLayout* layout) {
    buildSourceChoice(layout);
    auto* nav = new QHBoxLayout;
    m_back = new QPushButton(tr("Back"));
    m_back->setObjectName(QStringLiteral("lessonBack"));
    m_back->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    m_back->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Left));
    m_next = new QPushButton(tr("Next"));
    m_next->setObjectName(QStringLiteral("lessonNext"));
    m_next->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    m_next->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Right));
    m_next->setToolTip(tr("Next step (Alt+Right, or Page Down: a presentation clicker)"));
    m_back->setToolTip(tr("Previous step (Alt+Left, or Page Up)"));
    // Space, Page Down / Page Up (presentation remotes) and the arrows, whatever has focus.
    new LessonKeys(this);
    nav->addWidget(m_back);
    nav->addStretch(1);
    nav->addWidget(m_next);
    layout->addLayout(nav);
    connect(m_back, &QPushButton::clicked, this, &LessonPlayer::back);
    connect(m_next, &QPushButton::clicked, this, &LessonPlayer::next);
}

void LessonPlayer::forward() {
    // A clicker has only Next: while a callout waits, Next continues the run it paused; while
    // a training step waits for its source, Next takes the one offered first.
    if (m_choiceWaiting)
        (m_replayFirst ? m_replayInstead : m_trainLive)->click();
    else if (calloutVisible() && !m_continue->isHidden())
        m_continue->click();
    else if (m_next->isEnabled())
        next();
}

void LessonPlayer::backward() {
    if (m_back->isEnabled()) back();
}

void LessonPlayer::buildNotes(QVBoxLayout* layout) {
    m_notesToggle = new QToolButton;
    m_notesToggle->setObjectName(QStringLiteral("lessonNotesToggle"));
    m_notesToggle->setText(tr("Teacher notes"));
    m_notesToggle->setCheckable(true);
    m_notesToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_notesToggle->setArrowType(Qt::RightArrow);
    m_notesToggle->setAutoRaise(true);
    m_notes = new QTextBrowser;
    m_notes->setObjectName(QStringLiteral("lessonNotes"));
    m_notes->hide();
    layout->addWidget(m_notesToggle);
    layout->addWidget(m_notes, 2);
    connect(m_notesToggle, &QToolButton::toggled, this, &LessonPlayer::setNotesVisible);
}

void LessonPlayer::setLesson(const Lesson& lesson, int startIndex) {
    m_lesson = lesson;
    m_error->hide();
    m_title->setText(fromStd(lesson.title));
    m_notes->setMarkdown(fromStd(lesson.teacherNotes));
    setNotesVisible(false);
    m_index = -1;
    goTo(std::clamp(startIndex, 0, int(lesson.steps.size()) - 1));
}

void LessonPlayer::showLoadError(const QString& source, const QString& message) {
    m_lesson.reset();
    m_index = -1;
    m_title->setText(tr("This lesson does not load"));
    // The parser's message names the file already; a name that resolved to nothing does not.
    m_error->setText(message.contains(source) ? message : tr("%1\n\n%2").arg(source, message));
    m_error->show();
    m_notes->clear();
    clearCallout();
    refresh();
}

void LessonPlayer::clear() {
    m_lesson.reset();
    m_index = -1;
    m_error->hide();
    m_title->setText(tr("No lesson open: File ▸ Open lesson…"));
    clearCallout();
    refresh();
}

const LessonStep* LessonPlayer::currentStep() const {
    if (!m_lesson || m_index < 0 || m_index >= int(m_lesson->steps.size())) return nullptr;
    return &m_lesson->steps[size_t(m_index)];
}

void LessonPlayer::goTo(int index) {
    if (!m_lesson || index < 0 || index >= int(m_lesson->steps.size())) return;
    m_index = index;
    clearCallout();
    endSourceChoice();
    m_status->clear();
    refresh();
    emit stepEntered(index);
}

void LessonPlayer::next() {
    goTo(m_index + 1);
}

void LessonPlayer::back() {
    goTo(m_index - 1);
}

// Markdown lists get a paragraph's margins on every item: in the lesson column a table laid
// out as a list (lessonColumnMarkdown) then took a blank line per row more than the budget
// counts. Items sit line under line, as counted.
void LessonPlayer::setText(const QString& markdown) {
    m_text->setMarkdown(markdown);
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        if (!b.textList()) continue;
        QTextCursor cursor(b);
        QTextBlockFormat format = b.blockFormat();
        format.setTopMargin(0);
        format.setBottomMargin(0);
        cursor.setBlockFormat(format);
    }
}

void LessonPlayer::refresh() {
    const LessonStep* step = currentStep();
    const int count = m_lesson ? int(m_lesson->steps.size()) : 0;
    m_counter->setText(step ? QStringLiteral("%1 / %2").arg(m_index + 1).arg(count) : QString());
    m_stepTitle->setText(step ? fromStd(step->title) : QString());
    m_shownText = step ? filled(fromStd(step->text)) : QString();
    if (step)
        setText(m_shownText);
    else
        m_text->clear();
    m_text->setVisible(step != nullptr || m_error->isHidden());
    m_back->setEnabled(step && m_index > 0);
    m_next->setEnabled(step && m_index + 1 < count);
    showReplayButton();
    m_notesToggle->setVisible(m_lesson && !m_lesson->teacherNotes.empty());
}

void LessonPlayer::setRecordedRunAvailable(bool available) {
    m_recordedAvailable = available;
    showReplayButton();
}

void LessonPlayer::setReplaying(bool replaying) {
    m_replaying = replaying;
    showReplayButton();
}

void LessonPlayer::showReplayButton() {
    const LessonStep* step = currentStep();
    m_replayInstead->setVisible(step && !m_replaying && step->actionKind() == "start_preset" &&
                                (step->action.contains("fallback_run") || m_recordedAvailable));
}

void LessonPlayer::setValueFiller(std::function<QString(const QString&)> filler) {
    m_filler = std::move(filler);
}

// Placeholders filled, and tables laid out as lists: a table's cells break words in a column
// this narrow (lessonColumnMarkdown, which the lesson checker's budget counts).
QString LessonPlayer::filled(const QString& markdown) const {
    const QString column = fromStd(lessonColumnMarkdown(markdown.toStdString()));
    return m_filler && column.contains(QLatin1String("{{")) ? m_filler(column) : column;
}

void LessonPlayer::refreshValues() {
    const LessonStep* step = currentStep();
    if (!step) return;
    const QString text = fromStd(step->text);
    if (text.contains(QLatin1String("{{"))) {
        // Keep the reader's place: the text is replaced, not the scroll position.
        const int scroll = m_text->verticalScrollBar()->value();
        const QString now = filled(text);
        if (now != m_shownText) {
            m_shownText = now;
            setText(now);
            m_text->verticalScrollBar()->setValue(scroll);
        }
    }
    if (calloutVisible() && m_calloutSource.contains(QLatin1String("{{")))
        m_calloutText->setText(filled(m_calloutSource));
    if (calloutVisible()) QTimer::singleShot(0, this, &LessonPlayer::fitCallout);  // new lengths
}

QString LessonPlayer::counterText() const {
    return m_counter->text();
}

QString LessonPlayer::shownText() const {
    return m_text->toPlainText();
}

QString LessonPlayer::errorText() const {
    return m_error->isHidden() ? QString() : m_error->text();
}

QString LessonPlayer::calloutText() const {
    return m_calloutText->text();
}

bool LessonPlayer::calloutVisible() const {
    return !m_callout->isHidden();
}

bool LessonPlayer::notesVisible() const {
    return !m_notes->isHidden();
}

void LessonPlayer::showCallout(const QString& markdown, bool resumable) {
    m_calloutSource = markdown;
    m_calloutText->setText(filled(markdown));
    m_continue->setVisible(resumable);
    m_callout->show();
    fitCallout();
    QTimer::singleShot(0, this, &LessonPlayer::fitCallout);  // at the width the layout gives
}

void LessonPlayer::setCalloutResumable(bool resumable) {
    m_continue->setVisible(resumable);
}

void LessonPlayer::clearCallout() {
    m_calloutText->clear();
    m_callout->hide();
    m_text->setMaximumHeight(QWIDGETSIZE_MAX);
}

void LessonPlayer::setNotesVisible(bool visible) {
    if (m_notesToggle->isChecked() != visible) m_notesToggle->setChecked(visible);
    m_notesToggle->setArrowType(visible ? Qt::DownArrow : Qt::RightArrow);
    m_notes->setVisible(visible);
}

void LessonPlayer::setStatus(const QString& text) {
    m_status->setText(text);
}

}  // namespace qklab::gui

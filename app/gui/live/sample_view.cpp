// sample_view.cpp — see sample_view.h.
#include "live/sample_view.h"

#include <QFontDatabase>
#include <QLabel>
#include <QScrollBar>
#include <QTextCharFormat>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextEdit>
#include <QVBoxLayout>

#include "common/theme.h"

namespace qklab::gui {

QString displayBytes(const QByteArray& bytes) {
    QString out;
    out.reserve(bytes.size());
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        const bool printable = (b >= 0x20 && b < 0x7f) || b == '\n' || b == '\t';
        out += printable ? QChar(b) : QChar(0xFFFD);
    }
    return out;
}

SampleView::SampleView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    m_title = new QLabel;
    m_title->setObjectName(QStringLiteral("sampleTitle"));
    m_title->setWordWrap(true);
    m_title->setTextFormat(Qt::PlainText);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_text = new QTextEdit;
    m_text->setObjectName(QStringLiteral("sampleText"));
    m_text->setReadOnly(true);
    m_text->setAcceptRichText(false);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QTextEdit::WidgetWidth);
    m_text->setToolTip(
        tr("The prompt in plain type, then the bytes the model wrote in bold. Bytes that are not "
           "printable ASCII are shown as \uFFFD."));
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("sampleStatus"));
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_title);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_status);
}

void SampleView::reset(int64_t runId, const QString& title) {
    m_runId = runId;
    m_hasSample = false;
    m_generated.clear();
    m_text->clear();
    m_title->setText(title);
    m_status->clear();
}

void SampleView::setTitle(const QString& title) {
    m_title->setText(title);
}

void SampleView::begin(const QString& prompt) {
    m_hasSample = true;
    m_generated.clear();
    m_text->clear();
    QTextCursor cursor(m_text->document());
    cursor.insertText(prompt, QTextCharFormat());
}

void SampleView::appendGenerated(const QByteArray& bytes) {
    if (bytes.isEmpty()) return;
    m_generated += bytes;
    QTextCharFormat format;
    format.setFontWeight(QFont::Bold);
    format.setForeground(currentTheme() == Theme::Dark ? QColor(0x7c, 0xc4, 0xff)
                                                       : QColor(0x0b, 0x5c, 0xad));
    QScrollBar* bar = m_text->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 4;  // follow the text unless scrolled up
    QTextCursor cursor(m_text->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertText(displayBytes(bytes), format);
    if (atEnd) bar->setValue(bar->maximum());
}

void SampleView::setStatus(const QString& status) {
    m_status->setText(status);
}

void SampleView::copyFrom(const SampleView& other) {
    m_runId = other.m_runId;
    m_hasSample = other.m_hasSample;
    m_generated = other.m_generated;
    m_title->setText(other.title());
    m_status->setText(other.status());
    // An earlier clone is ours to delete; Qt deletes the document it created itself.
    QTextDocument* old = m_text->document();
    const bool ours = old->parent() == m_text;
    m_text->setDocument(other.m_text->document()->clone(m_text));
    if (ours) old->deleteLater();
}

QString SampleView::title() const {
    return m_title->text();
}

QString SampleView::text() const {
    return m_text->toPlainText();
}

QString SampleView::status() const {
    return m_status->text();
}

}  // namespace qklab::gui

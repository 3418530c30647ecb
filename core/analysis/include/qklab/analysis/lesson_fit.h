// qklab/analysis/lesson_fit.h — how much text the lesson column holds, so that a lesson's step text
// and callouts read without scrolling on a 1024x768 projector in presenter mode.
//
// The budget is counted in lines of the lesson column: Markdown wrapped at a number of
// characters per line (words kept whole), paragraphs, list items and headings each starting a
// line, a blank line between blocks, tables laid out as lists (lessonColumnMarkdown: a table's
// cells would break words in a column this narrow). A placeholder counts as kPlaceholderChars;
// a step title's lines past its first count with the text.
// The CLI is Qt-free, so the budget is these numbers; the app's presenter layout guarantees
// they fit at 1024x768 (tests/app/gui/lesson_fit_gui_test.cpp renders the longest text the budget
// allows). Torch-free.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "qklab/config/run_config.h"

namespace qklab {

struct Lesson;

// Characters a line holds: step text (the panel's font) and callouts (bold).
constexpr int kLessonTextChars = 26;
constexpr int kLessonCalloutChars = 24;
// Lines the column holds for the step text, and for the step text and a callout together
// (the callout's border and Continue button take kCalloutFrameLines of them).
constexpr int kLessonColumnLines = 26;
constexpr int kCalloutFrameLines = 3;
// A spike's or an alarm's reading, shown under its callout: the verdict and the advice, at most
// this many callout lines (the evidence stays in the Spikes view).
constexpr int kCalloutReadingLines = 12;
// What a filled placeholder is counted as ("0.0243", "step 10", "not yet").
constexpr int kPlaceholderChars = 7;

// The Markdown the lesson column shows: a table becomes a list, one block per row headed by
// its first cell, each other cell "header: cell" (a table in a 26-character column breaks
// words inside its cells).
std::string lessonColumnMarkdown(const std::string& markdown);

// Lines `markdown` takes at `charsPerLine`, as counted for the budget.
int lessonTextLines(const std::string& markdown, int charsPerLine);

// The first paragraph of a spike's diagnosis (its verdict and advice), cut to what
// kCalloutReadingLines hold: what a spike callout shows under its text.
std::string calloutReading(const std::string& diagnosis);
// The same for a logit alarm's text: its first clause (the layer, step and value past the
// line), then its verdict and advice; the q/k norms' numbers stay in the Spikes view.
std::string alarmReading(const std::string& alarmText);

// The status line the lesson player writes under a start_preset step's text when its run
// starts: the run's name and each of the config's warnings (configWarnings: the setup dock
// that shows them is hidden in presenter mode).
std::string lessonStartStatus(const std::string& runName, const RunConfig& config);

// Refuses a step whose text (with its status line, `status` by step index), or whose text with
// one of its callouts, does not fit: Error{InvalidConfig} naming `origin`, the step, the field
// and how many lines it is over.
void checkLessonFits(const Lesson& lesson, const std::string& origin,
                     const std::map<size_t, std::string>& status = {});

}  // namespace qklab

// lesson_fit.cpp — the lesson column's budget: tables as lists, wrapped lines, the checker.
#include "qklab/analysis/lesson_fit.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "qklab/analysis/lesson.h"
#include "qklab/util/error.h"

namespace qklab {

namespace {

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t");
    if (a == std::string::npos) return {};
    return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

bool isTableRow(const std::string& line) {
    const std::string t = trim(line);
    return t.size() > 1 && t.front() == '|';
}

std::vector<std::string> cells(const std::string& row) {
    std::string t = trim(row);
    if (!t.empty() && t.front() == '|') t.erase(0, 1);
    if (!t.empty() && t.back() == '|') t.pop_back();
    std::vector<std::string> out;
    std::string cell;
    for (char c : t) {
        if (c == '|') {
            out.push_back(trim(cell));
            cell.clear();
        } else {
            cell += c;
        }
    }
    out.push_back(trim(cell));
    return out;
}

bool isSeparator(const std::string& row) {
    const std::string t = trim(row);
    return t.find_first_not_of("|-: ") == std::string::npos && t.find('-') != std::string::npos;
}

// One table (its header, its separator, its rows) as blocks: the first cell in bold, then a
// list of "header: cell".
std::string tableAsList(const std::vector<std::string>& rows) {
    const std::vector<std::string> header = cells(rows.front());
    std::string out;
    for (size_t r = 1; r < rows.size(); ++r) {
        if (isSeparator(rows[r])) continue;
        const std::vector<std::string> row = cells(rows[r]);
        if (!out.empty()) out += "\n";
        out += "**" + (row.empty() ? std::string() : row[0]) + "**\n";
        for (size_t c = 1; c < row.size(); ++c)
            out += "- " + (c < header.size() && !header[c].empty() ? header[c] + ": " : "") +
                   row[c] + "\n";
    }
    return out;
}

// The text as a reader sees it, for counting: placeholders at their counted width, emphasis
// and code marks dropped.
std::string visible(const std::string& line) {
    std::string out;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line.compare(i, 2, "{{") == 0) {
            const size_t end = line.find("}}", i);
            if (end != std::string::npos) {
                out.append(kPlaceholderChars, '0');
                i = end + 1;
                continue;
            }
        }
        if (line[i] == '*' || line[i] == '`' || line[i] == '_') continue;
        out += line[i];
    }
    return out;
}

// UTF-8 characters, not bytes: "√" and "→" are one each.
int characters(const std::string& word) {
    return int(std::count_if(word.begin(), word.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

// Lines one block (a paragraph, a list item, a heading) takes, words kept whole; a word longer
// than a line takes the lines it needs.
int wrappedLines(const std::string& text, int width) {
    std::istringstream in(text);
    int count = 0, used = 0;
    for (std::string word; in >> word;) {
        const int n = characters(word);
        if (count == 0 || used + 1 + n > width) {
            count += std::max(1, (n + width - 1) / width);
            used = n > width ? n % width : n;
        } else {
            used += 1 + n;
        }
    }
    return count;
}

}  // namespace

std::string lessonColumnMarkdown(const std::string& markdown) {
    const std::vector<std::string> in = lines(markdown);
    std::string out;
    for (size_t i = 0; i < in.size();) {
        if (isTableRow(in[i]) && i + 1 < in.size() && isSeparator(in[i + 1])) {
            std::vector<std::string> table;
            while (i < in.size() && isTableRow(in[i])) table.push_back(in[i++]);
            out += tableAsList(table);
            continue;
        }
        out += in[i++] + "\n";
    }
    if (!markdown.empty() && markdown.back() != '\n' && !out.empty()) out.pop_back();
    return out;
}

int lessonTextLines(const std::string& markdown, int charsPerLine) {
    int total = 0;
    bool gap = false;  // a blank line since the last block
    std::string block;
    const auto flush = [&] {
        if (block.empty()) return;
        total += wrappedLines(visible(block), charsPerLine);
        block.clear();
    };
    for (const std::string& raw : lines(lessonColumnMarkdown(markdown))) {
        const std::string line = trim(raw);
        if (line.empty()) {
            flush();
            gap = total > 0;
            continue;
        }
        // A list item or a heading starts a block of its own.
        const bool starts = line[0] == '-' || line[0] == '#' ||
                            (std::isdigit(static_cast<unsigned char>(line[0])) &&
                             line.find(". ") != std::string::npos && line.find(". ") < 4);
        if (starts || block.empty()) {
            flush();
            if (gap) ++total;
            gap = false;
        }
        block += (block.empty() ? "" : " ") + line;
    }
    flush();
    return total;
}

std::string calloutReading(const std::string& diagnosis) {
    const std::string reading = diagnosis.substr(0, diagnosis.find("\n\n"));
    const auto fits = [](const std::string& t) {
        return lessonTextLines(t, kLessonCalloutChars) <= kCalloutReadingLines;
    };
    if (fits(reading)) return reading;
    // Too long for the lines kept for it: the first sentence (the verdict), "Tier N:" and as
    // many of the advice's last sentences (what to do) as fit.
    const std::string more = " (More in the Spikes view.)";
    const size_t end = reading.find(". ");
    const std::string verdict = end == std::string::npos ? reading : reading.substr(0, end + 1);
    const size_t tier = reading.rfind("Tier ");
    const size_t colon = tier == std::string::npos ? tier : reading.find(": ", tier);
    if (colon != std::string::npos && tier > end) {
        const std::string head = verdict + " " + reading.substr(tier, colon + 2 - tier);
        for (size_t from = colon + 2; from < reading.size();) {
            const std::string both = head + reading.substr(from) + more;
            if (fits(both)) return both;
            const size_t next = reading.find(". ", from);
            if (next == std::string::npos) break;
            from = next + 2;
        }
    }
    return verdict + more;
}

std::string alarmReading(const std::string& alarmText) {
    // "Layer 0, step 10: logit_max_raw 122 passed the intervention line (30); q/k norm p90 ...
    // (step 0, 1.47). <verdict>. Tier 3: ..."
    const size_t clause = alarmText.find("; ");
    const size_t end = clause == std::string::npos ? clause : alarmText.find(". ", clause);
    if (end == std::string::npos) return calloutReading(alarmText);
    return calloutReading(alarmText.substr(0, clause) + "." + alarmText.substr(end + 1));
}

namespace {

[[noreturn]] void over(const std::string& where, const std::string& field, const std::string& what,
                       int used, int room) {
    throw Error(ErrorCode::InvalidConfig,
                where + field + ": " + what + " take" + (what == "the text" ? "s " : " ") +
                    std::to_string(used) + " lines of the lesson column, which holds " +
                    std::to_string(room) + " at 1024x768 in presenter mode (" +
                    std::to_string(kLessonTextChars) +
                    " characters a line): " + std::to_string(used - room) +
                    (used - room == 1 ? " line" : " lines") + " over; shorten it");
}

}  // namespace

std::string lessonStartStatus(const std::string& runName, const RunConfig& config) {
    std::string line = "Training \u201c" + runName + "\u201d live.";
    for (const std::string& w : configWarnings(config)) line += "\nWarning: " + w;
    return line;
}

void checkLessonFits(const Lesson& lesson, const std::string& origin,
                     const std::map<size_t, std::string>& status) {
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const LessonStep& step = lesson.steps[i];
        // The status line: a run taken by a rehearsal is numbered, " (2)".
        const auto said = status.find(i);
        int statusLines = 0;
        if (said != status.end()) {
            std::istringstream in(said->second);
            for (std::string line; std::getline(in, line);)
                statusLines += wrappedLines(line + " (2)", kLessonTextChars);
        }
        const std::string where = origin + ": step " + std::to_string(i + 1) +
                                  (step.title.empty() ? "" : " (\"" + step.title + "\")") + ": ";
        // A step title beside the counter ("3 / 5") has one line of its own; more come off
        // the text's.
        const int title = std::max(1, lessonTextLines(step.title, kLessonTextChars - 6));
        const int text = lessonTextLines(step.text, kLessonTextChars) + title - 1 + statusLines;
        if (text > kLessonColumnLines) over(where, "text", "the text", text, kLessonColumnLines);
        for (size_t p = 0; p < step.pauses.size(); ++p) {
            const PauseCondition& c = step.pauses[p];
            const bool reading =
                c.kind == "spike" || c.kind == "logit_alarm" || c.kind == "forecast";
            const int callout = kCalloutFrameLines +
                                lessonTextLines(c.callout, kLessonCalloutChars) +
                                (reading ? kCalloutReadingLines + 1 : 0);
            if (text + callout > kLessonColumnLines)
                over(where, "pause[" + std::to_string(p) + "].callout",
                     std::string("the text and this callout together") +
                         (reading ? " (with the reading qklab appends)" : ""),
                     text + callout, kLessonColumnLines);
        }
    }
}

}  // namespace qklab

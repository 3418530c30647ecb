// module.cpp — qklab._qklab, the Python extension: the C++ side of the package's run object.
//
// Built with torch's own pybind11 and its tensor casters (torch/extension.h), against the
// torch the package is installed with, so a torch.Tensor crosses as an at::Tensor without a
// copy. Errors from qklab (bad input, the store) reach Python as ValueError (bad input) or
// RuntimeError with qklab's message.
#include <torch/extension.h>

#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "external_run.h"
#include "qklab/config/names.h"
#include "qklab/store/record_columns.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "qklab/util/error.h"
#include "qklab/util/version.h"

namespace py = pybind11;
using namespace qklab;

namespace {

// A spike or an alarm as a dict keyed by its record table's column names: the same keys as
// the store, `export` and `show` (qklab/store/record_columns.h), with no list of fields of its own.
template <class Record>
py::dict recordDict(const RecordTable<Record>& table, const Record& r) {
    py::dict d;
    for (const auto& column : table.columns) {
        const ColumnValue v = column.get(r);
        if (const auto* i = std::get_if<int64_t>(&v))
            d[column.name] = *i;
        else if (const auto* x = std::get_if<double>(&v))
            d[column.name] = *x;
        else if (const auto* t = std::get_if<std::string>(&v))
            d[column.name] = *t;
        else
            d[column.name] = py::none();
    }
    return d;
}

py::dict reportDict(const MonitorReport& r) {
    py::list spikes, alarms, forecasts;
    for (const Spike& s : r.spikes) spikes.append(recordDict(spikeTable(), s));
    for (const LogitAlarm& a : r.alarms) alarms.append(recordDict(logitAlarmTable(), a));
    for (const Forecast& f : r.forecasts) forecasts.append(recordDict(forecastTable(), f));
    py::dict d;
    d["spikes"] = spikes;
    d["alarms"] = alarms;
    d["forecasts"] = forecasts;
    return d;
}

// One layer from Python: (q, k, q_raw, k_raw, scale, softcap or None, hidden or None).
struct LayerArgs {
    torch::Tensor q, k, qRaw, kRaw;
    double scale = 1, softcap = 0;
    torch::Tensor hidden;  // undefined: the block's output was not found (max_activation NaN)
};

py::dict probe(ExternalRun& run, int64_t step, const std::vector<py::tuple>& layers) {
    std::vector<LayerArgs> held;
    held.reserve(layers.size());
    for (const py::tuple& t : layers) {
        if (t.size() != 7)
            throw Error(ErrorCode::InvalidRequest,
                        "probe: each layer is (q, k, q_raw, k_raw, scale, softcap, hidden)");
        LayerArgs a{t[0].cast<torch::Tensor>(),
                    t[1].cast<torch::Tensor>(),
                    t[2].cast<torch::Tensor>(),
                    t[3].cast<torch::Tensor>(),
                    t[4].cast<double>(),
                    t[5].is_none() ? 0.0 : t[5].cast<double>(),
                    t[6].is_none() ? torch::Tensor() : t[6].cast<torch::Tensor>()};
        held.push_back(std::move(a));
    }
    std::vector<ExternalLayer> view;
    for (const LayerArgs& a : held)
        view.push_back({&a.q, &a.k, &a.qRaw, &a.kRaw, a.scale, a.softcap,
                        a.hidden.defined() ? &a.hidden : nullptr});
    MonitorReport r;
    {
        py::gil_scoped_release noGil;  // the reductions run without holding Python up
        r = run.probe(step, view);
    }
    return reportDict(r);
}

// The run `ref` ("id:N" or "name:X") of the database at `dbPath` as {id, name, status,
// steps_done, source}, or None when the file or the run does not exist. Reads only.
py::object storedRun(const std::string& dbPath, const std::string& ref) {
    std::error_code ec;
    if (!std::filesystem::exists(dbPath, ec)) return py::none();
    RunStore store(dbPath, StoreAccess::ReadOnly);
    RunInfo r;
    try {
        r = store.findRun(ref);
    } catch (const Error& e) {
        if (e.code() == ErrorCode::NotFound) return py::none();
        throw;
    }
    py::dict d;
    d["id"] = r.id;
    d["name"] = r.name;
    d["status"] = toString(r.status);
    d["steps_done"] = r.stepsDone;
    d["source"] = r.source;
    return d;
}

// Tags (comma separated) and notes of a run, as the app's details and `qklab-cli tag` set them.
void annotateRun(const std::string& dbPath, int64_t runId, const std::string& tags,
                 const std::string& notes) {
    RunStore store(dbPath);
    if (!tags.empty()) store.setTags(runId, tags);
    if (!notes.empty()) store.setNotes(runId, notes);
}

}  // namespace

PYBIND11_MODULE(_qklab, m) {
    m.doc() = "qklab's engine for runs trained outside qklab (see the qklab package)";
    static py::exception<Error> qklabError(m, "QklabError", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const Error& e) {
            if (e.code() == ErrorCode::InvalidRequest)
                PyErr_SetString(PyExc_ValueError, e.what());
            else
                py::set_error(qklabError, e.what());
        }
    });
    m.attr("__version__") = appVersion();
    m.attr("TORCH_VERSION") = TORCH_VERSION;
    // The QK-norm kinds attention_fn may declare: the config's own names (qklab/util/choices.h).
    m.attr("QK_NORM_KINDS") = py::tuple(py::cast(choiceNames<QkNormVariant>()));
    m.def("default_db_path", &defaultDatabasePath,
          "the database the app and qklab-cli use by default");
    // The core's own rules, for the package to apply where a value enters (init), not later.
    m.def("check_run_name", &checkRunName, py::arg("name"),
          "raises ValueError for a name the store (and import) would refuse");
    m.def("stored_user_config", &storedUserConfig, py::arg("json"),
          "the config's JSON text as it is stored (NaN and Infinity as \"nan\" and \"inf\")");
    m.def("stored_run", &storedRun, py::arg("db_path"), py::arg("ref"),
          "the run 'id:N' or 'name:X' as a dict, or None; reads only");
    m.def("annotate_run", &annotateRun, py::arg("db_path"), py::arg("run_id"), py::arg("tags"),
          py::arg("notes"), "stores a run's tags (comma separated) and notes");

    py::class_<ExternalRunSpec>(m, "RunSpec")
        .def(py::init<>())
        .def_readwrite("db_path", &ExternalRunSpec::dbPath)
        .def_readwrite("name", &ExternalRunSpec::name)
        .def_readwrite("source", &ExternalRunSpec::source)
        .def_readwrite("user_config_json", &ExternalRunSpec::userConfigJson)
        .def_readwrite("seed", &ExternalRunSpec::seed)
        .def_readwrite("seed_known", &ExternalRunSpec::seedKnown)
        .def_readwrite("mla_d_c", &ExternalRunSpec::mlaDC)
        .def_readwrite("mla_d_rope", &ExternalRunSpec::mlaDRope)
        .def_readwrite("mla_q_lora", &ExternalRunSpec::mlaQLora)
        .def_readwrite("device", &ExternalRunSpec::device)
        .def_readwrite("torch_version", &ExternalRunSpec::torchVersion)
        .def_readwrite("n_layers", &ExternalRunSpec::nLayers)
        .def_readwrite("n_heads", &ExternalRunSpec::nHeads)
        .def_readwrite("head_dim", &ExternalRunSpec::headDim)
        .def_readwrite("seq_len", &ExternalRunSpec::seqLen)
        .def_readwrite("qk_norm", &ExternalRunSpec::qkNorm)
        .def_readwrite("softcap", &ExternalRunSpec::softcap)
        .def_readwrite("probe_every", &ExternalRunSpec::probeEvery)
        .def_readwrite("map_every", &ExternalRunSpec::mapEvery)
        .def_readwrite("steps", &ExternalRunSpec::steps)
        .def_readwrite("resume_run_id", &ExternalRunSpec::resumeRunId);

    py::class_<ExternalRun>(m, "Run")
        .def(py::init<const ExternalRunSpec&>())
        .def_property_readonly("id", &ExternalRun::runId)
        .def_property_readonly("finished", &ExternalRun::finished)
        .def_property_readonly("resumed_after", &ExternalRun::resumedAfter)
        .def_property_readonly("last_probe_step", &ExternalRun::lastProbeStep)
        .def(
            "log",
            [](ExternalRun& r, int64_t step, const std::map<std::string, double>& values) {
                return reportDict(r.log(step, values));
            },
            py::arg("step"), py::arg("values"))
        .def("probe", &probe, py::arg("step"), py::arg("layers"))
        .def("finish", &ExternalRun::finish, py::arg("status") = "", py::arg("message") = "");
}

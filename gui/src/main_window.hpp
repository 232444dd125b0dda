#pragma once
// The explorer's window: a form of every training option on the left, the verdict on top, the
// charts and the tables in the middle. Every edit goes to the Session; every number shown comes
// back from it.

#include <QElapsedTimer>
#include <QMainWindow>
#include <QString>
#include <functional>
#include <utility>
#include <vector>

#include "models.hpp"
#include "session.hpp"

class QAction;
class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFrame;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTimer;
class QToolButton;
class QGroupBox;

class QFormLayout;

namespace trainplan::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  struct Options {
    bool remember = true;  // restore and store the settings and the window state (QSettings)
  };
  enum class Verdict { fits, tight, does_not_fit, invalid };

  MainWindow(Session& session, Options options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Shows the settings in the form and evaluates them.
  void applySettings(const Settings& s);
  // Applies a training config file (File > Open training config); a bad file is a message box, or
  // `error` when given. Returns whether it was applied.
  bool loadTrainingConfig(const QString& path, QString* error = nullptr);
  // The training configs in force: the i-th dropped, or read one place earlier (main_window_files.cpp).
  void removeConfigFile(int i);
  void moveConfigFile(int i, int by);
  // What the form says now.
  [[nodiscard]] request::ClusterShape formCluster() const;
  // A change the user made (a field, a loaded strategy, a recommendation): shown and evaluated,
  // the options it changes the window's own (Session::editSettings).
  void editSettings(const Settings& s);
  [[nodiscard]] Settings formSettings() const;

  [[nodiscard]] Verdict verdict() const { return verdict_; }
  [[nodiscard]] QString verdictText() const;  // plain text of the banner
  [[nodiscard]] QChart* memoryChart() const;
  [[nodiscard]] QChart* stepTimeChart() const;
  [[nodiscard]] QChart* sweepChart() const;
  [[nodiscard]] QChart* plansChart() const;
  [[nodiscard]] const MemoryModel& memoryModel() const { return memory_model_; }
  [[nodiscard]] const StepTimeModel& stepTimeModel() const { return time_model_; }
  [[nodiscard]] const PlansModel& plansModel() const { return plans_model_; }
  // Shows a table tab by name: memory, time, communication, strategies, sweep, plans, compare.
  bool showTableTab(const QString& name);
  // Shows a chart tab by name: time, sweep, plans.
  bool showChartTab(const QString& name);

  // Exports without dialogs (the menu actions ask for the path, then call these). chart: memory,
  // time, sweep, plans; the format follows the suffix (.png or .svg).
  bool exportChart(const QString& chart, const QString& path, QString* error = nullptr);
  bool exportEstimateJson(const QString& path, QString* error = nullptr);
  // The estimate of the current configuration as JSON text (empty when there is none).
  [[nodiscard]] QString estimateJson() const;
  // The current plan as a launch configuration (kind: deepspeed, accelerate, torchrun), with what
  // the format cannot express in `notes`; empty with `error` set when there is none.
  [[nodiscard]] QString planText(const QString& kind, QStringList* notes = nullptr,
                                 QString* error = nullptr) const;
  bool exportPlan(const QString& kind, const QString& path, QString* error = nullptr);
  // Renders the window at `size` and writes it as PNG.
  bool saveScreenshot(const QString& path, QSize size);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  // The form (main_window_form.cpp).
  QWidget* buildForm();
  QGroupBox* buildModelBox();
  QGroupBox* buildClusterBox();
  QGroupBox* buildConfigFilesBox();
  void syncConfigFiles(const Settings& s);
  void setConfigFiles(std::vector<std::string> files);
  void addFileRows(QFormLayout* form);
  // The fields of every schema option of `group`, one row each.
  void addOptionRows(QFormLayout* form, const char* group);
  void connectForm();
  void syncForm(const Settings& s);
  void updateEnabled();
  void formEdited();
  void modelEdited();
  void clusterEdited();
  void loadStrategy(const QModelIndex& index);
  void recommend();

  // The charts, the plan search and the tables (main_window_central.cpp).
  QWidget* buildCentral();
  QWidget* buildCharts();
  QWidget* buildPlansPage();
  QWidget* buildTables();
  QWidget* buildComparePage();
  void refreshCharts();
  void searchStarted();
  void searchProgress(int done, int total);
  void searchFinished();
  // The search's line and the plans' stale mark, for the request as it is now.
  void refreshSearchState();
  // Loads plan i, or says why not (its search answered an earlier request).
  void loadPlan(int i);
  void planClicked(const QPointF& point);

  // The verdict (main_window_banner.cpp).
  QFrame* buildBanner();
  void refreshBanner();
  void restyle();

  // The menus (main_window_menus.cpp).
  void buildActions();
  void showAbout();

  // Files in and out (main_window_files.cpp). `use` puts the path of the file chosen into the
  // settings.
  void openFile(const QString& title, const QString& filter,
                const std::function<void(Settings&, const QString&)>& use);
  void openModelConfig();
  void openTrainingConfig();
  void openClusterFile();
  void clearClusterFile();
  void openProfile();
  void clearProfile();
  void exportChartDialog(const QString& chart);
  void exportEstimateDialog();
  void exportPlanDialog(const QString& kind);

  // The session's answer in the models (main_window.cpp).
  void sessionChanged();
  void pinsChanged();
  void refreshModels();
  [[nodiscard]] std::vector<const Evaluation*> columns(QStringList* names) const;
  [[nodiscard]] QChartView* chartView(const QString& name) const;

  Session& session_;
  Options options_;
  Verdict verdict_ = Verdict::invalid;
  bool syncing_ = false;
  std::optional<int> loaded_plan_;

  MemoryModel memory_model_;
  StepTimeModel time_model_;
  CommunicationModel comm_model_;
  StrategiesModel strategies_model_;
  SweepModel sweep_model_;
  PlansModel plans_model_;
  CompareModel compare_model_;

  // Form.
  QComboBox* model_ = nullptr;
  QLabel* model_info_ = nullptr;
  QComboBox* gpu_ = nullptr;
  QSpinBox* gpus_per_node_ = nullptr;
  QSpinBox* nodes_ = nullptr;
  QLineEdit* inter_node_ = nullptr;
  QLabel* cluster_file_ = nullptr;
  QListWidget* config_files_ = nullptr;
  QToolButton* clear_cluster_file_ = nullptr;
  QLabel* profile_file_ = nullptr;
  QToolButton* clear_profile_ = nullptr;
  QGroupBox* lora_box_ = nullptr;
  QDoubleSpinBox* host_memory_ = nullptr;
  QComboBox* sweep_axis_ = nullptr;
  // The schema's options (request::options()) and the field showing each.
  std::vector<std::pair<const request::Option*, QWidget*>> option_widgets_;

  // Centre.
  QFrame* banner_ = nullptr;
  QLabel* verdict_label_ = nullptr;
  QLabel* details_label_ = nullptr;
  QChartView* memory_view_ = nullptr;
  QChartView* time_view_ = nullptr;
  QChartView* sweep_view_ = nullptr;
  QChartView* plans_view_ = nullptr;
  QTabWidget* chart_tabs_ = nullptr;
  QTabWidget* table_tabs_ = nullptr;
  QPushButton* search_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* search_progress_ = nullptr;
  QLabel* search_label_ = nullptr;
  QLabel* timing_label_ = nullptr;
  QTimer* search_clock_ = nullptr;
  QElapsedTimer search_started_;
  QAction* pin_action_ = nullptr;
  QAction* search_action_ = nullptr;
  QAction* cancel_action_ = nullptr;
  QList<QAction*> plan_export_actions_;
};

}  // namespace trainplan::gui
